package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
)

func staffAdd(e *env, args []string) error {
	fs, db := flags(e, "staff add")
	group := fs.String("group", "", "the school's group id: a teacher or a school administrator")
	district := fs.String("district", "", "district id: a district administrator (instead of --group)")
	email := fs.String("email", "", "the email they sign in with")
	name := fs.String("name", "", "their name (default: the email)")
	role := fs.String("role", "", "teacher, school-admin or district-admin")
	var classes flagList
	fs.Var(&classes, "class", "a class a teacher teaches; repeat it for each")
	return withPlatform(e, fs, db, args, false, []string{"email", "role"}, func(p *platform.Platform) error {
		if err := oneOwner("staff add", "staff", *group, *district); err != nil {
			return err
		}
		m, err := p.AddStaff(e.ctx, analytics.Staff{GroupID: *group, DistrictID: *district, Email: *email, Name: *name,
			Role: analytics.Role(*role), ClassIDs: classes})
		if err == nil {
			fmt.Fprintf(e.stdout, "added %s (%s) to the staff of %s as %s%s: %s\n", m.Name, m.Email, ownerName(m.GroupID, m.DistrictID), m.Role, teaching(m), m.ID)
		}
		return err
	})
}

// teaching names a teacher's classes.
func teaching(m analytics.Staff) string {
	if len(m.ClassIDs) == 0 {
		return ""
	}
	return " of " + strings.Join(m.ClassIDs, ", ")
}

func staffList(e *env, args []string) error {
	fs, db := flags(e, "staff list")
	group := fs.String("group", "", "group id")
	district := fs.String("district", "", "district id (instead of --group)")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		if err := oneOwner("staff list", "staff", *group, *district); err != nil {
			return err
		}
		staff, err := p.StaffOf(e.ctx, *group, *district)
		table(e, "ID\tEMAIL\tNAME\tROLE\tCLASSES", func(w io.Writer) {
			for _, m := range staff {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.Email, m.Name, m.Role, cmp.Or(strings.Join(m.ClassIDs, ","), "-"))
			}
		})
		return err
	})
}

func staffRemove(e *env, args []string) error {
	fs, db := flags(e, "staff remove")
	id := fs.String("staff", "", "the staff member's id (stf_…), as staff list shows it")
	return withPlatform(e, fs, db, args, false, []string{"staff"}, func(p *platform.Platform) error {
		err := p.RemoveStaff(e.ctx, *id)
		if err == nil {
			fmt.Fprintf(e.stdout, "removed staff member %s\n", *id)
		}
		return err
	})
}
