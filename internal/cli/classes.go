package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/roster"
)

func classCreate(e *env, args []string) error {
	fs, db := flags(e, "class create")
	group := fs.String("group", "", "group id")
	id := fs.String("id", "", "class id")
	name := fs.String("name", "", "display name")
	start := fs.String("start", "", "first day of the class's term, e.g. 2026-09-01 (optional)")
	end := fs.String("end", "", "last day of the class's term (optional)")
	return withPlatform(e, fs, db, args, true, []string{"group", "id", "name"}, func(p *platform.Platform) error {
		c, err := p.CreateClass(e.ctx, analytics.Class{GroupID: *group, ID: *id, Name: *name, Start: *start, End: *end, Members: fs.Args()})
		if err == nil {
			fmt.Fprintf(e.stdout, "created class %s (%s) in group %s with %s\n", c.ID, c.Name, c.GroupID, analytics.Plural(len(c.Members), "student"))
		}
		return err
	})
}

func classList(e *env, args []string) error {
	fs, db := flags(e, "class list")
	group := fs.String("group", "", "group id")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		classes, err := p.Classes(e.ctx, *group)
		table(e, "ID\tNAME\tTERM\tSTUDENTS", func(w io.Writer) {
			for _, c := range classes {
				term := "-"
				if c.Start != "" || c.End != "" {
					term = cmp.Or(c.Start, "…") + " – " + cmp.Or(c.End, "…")
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", c.ID, c.Name, term, len(c.Members))
			}
		})
		return err
	})
}

func classShow(e *env, args []string) error {
	fs, db := flags(e, "class show")
	group := fs.String("group", "", "group id")
	id := fs.String("id", "", "class id")
	return withPlatform(e, fs, db, args, false, []string{"group", "id"}, func(p *platform.Platform) error {
		c, err := p.Class(e.ctx, *group, *id)
		if err != nil {
			return err
		}
		students, err := p.Students(e.ctx, *group)
		names := map[string]string{}
		for _, s := range students {
			names[s.ID] = s.Name
		}
		fmt.Fprintf(e.stdout, "class %s (%s) of group %s, %s\n", c.ID, c.Name, c.GroupID, analytics.Plural(len(c.Members), "student"))
		table(e, "STUDENT\tNAME", func(w io.Writer) {
			for _, m := range c.Members {
				fmt.Fprintf(w, "%s\t%s\n", m, names[m])
			}
		})
		return err
	})
}

func classRename(e *env, args []string) error {
	fs, db := flags(e, "class rename")
	group := fs.String("group", "", "group id")
	id := fs.String("id", "", "class id")
	name := fs.String("name", "", "display name")
	return withPlatform(e, fs, db, args, false, []string{"group", "id", "name"}, func(p *platform.Platform) error {
		c, err := p.Class(e.ctx, *group, *id)
		if err != nil {
			return err
		}
		c.Name = *name
		if _, err = p.UpdateClass(e.ctx, c); err == nil {
			fmt.Fprintf(e.stdout, "renamed class %s of group %s to %s\n", c.ID, c.GroupID, c.Name)
		}
		return err
	})
}

func classMembers(e *env, args []string) error {
	fs, db := flags(e, "class members")
	group := fs.String("group", "", "group id")
	id := fs.String("id", "", "class id")
	return withPlatform(e, fs, db, args, true, []string{"group", "id"}, func(p *platform.Platform) error {
		c, err := p.SetClassMembers(e.ctx, *group, *id, fs.Args())
		if err == nil {
			fmt.Fprintf(e.stdout, "class %s of group %s has %s: %s\n", c.ID, c.GroupID, analytics.Plural(len(c.Members), "student"),
				cmp.Or(strings.Join(c.Members, ", "), "none"))
		}
		return err
	})
}

func classDelete(e *env, args []string) error {
	fs, db := flags(e, "class delete")
	group := fs.String("group", "", "group id")
	id := fs.String("id", "", "class id")
	return withPlatform(e, fs, db, args, false, []string{"group", "id"}, func(p *platform.Platform) error {
		err := p.DeleteClass(e.ctx, *group, *id)
		if err == nil {
			fmt.Fprintf(e.stdout, "deleted class %s of group %s (its students stay in the group)\n", *id, *group)
		}
		return err
	})
}

// rowsShown is how many of the rows an import skipped, and of its
// warnings, it lists; the platform API's answer lists them all.
const rowsShown = 20

// listRows prints what of an import's rows the heading names, the first
// rowsShown of them.
func listRows(e *env, heading string, rows []string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(e.stdout, heading)
	for i, row := range rows {
		if i == rowsShown {
			fmt.Fprintf(e.stdout, "  and %d more\n", len(rows)-i)
			return
		}
		fmt.Fprintf(e.stdout, "  %s\n", row)
	}
}

// listWarnings prints an import's warnings, as listRows does.
func listWarnings(e *env, warnings []roster.Warning) {
	rows := make([]string, len(warnings))
	for i, w := range warnings {
		rows[i] = fmt.Sprintf("%s line %d, column %s: %s", w.File, w.Line, w.Column, w.Message)
	}
	listRows(e, fmt.Sprintf("%s (cells not used and not read, their rows taken):", analytics.Plural(len(warnings), "warning")), rows)
}

func rosterImport(e *env, args []string) error {
	fs, db := flags(e, "roster import")
	group := fs.String("group", "", "group id")
	district := fs.String("district", "", "district id: import every school of the bundle into the district, each a group")
	org := fs.String("org", "", "the school's sourcedId in orgs.csv, for a bundle of several schools")
	dryRun := fs.Bool("dry-run", false, "say what the import would change, and change nothing")
	return withPlatform(e, fs, db, args, true, nil, func(p *platform.Platform) error {
		if fs.NArg() != 1 {
			return fmt.Errorf("roster import takes one file, a OneRoster CSV bundle (.zip)")
		}
		if err := oneOwner("roster import", "bundle", *group, *district); err != nil {
			return err
		}
		data, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return err
		}
		b, err := roster.Read(data)
		if err != nil {
			return fmt.Errorf("%s refused, nothing imported: %w", fs.Arg(0), err)
		}
		if *district != "" {
			return importDistrictRoster(e, p, *district, fs.Arg(0), b, *dryRun)
		}
		res, err := p.ImportRoster(e.ctx, *group, *org, b, *dryRun)
		var notNamed *platform.SchoolNotNamedError
		if errors.As(err, &notNamed) {
			return errors.New(notNamed.Say("--org ORG_ID"))
		} else if err != nil {
			return err
		}
		verb := "imported"
		if res.DryRun {
			verb = "would import (dry run, nothing changed)"
		}
		school := ""
		if res.School != "" {
			school = " (school " + res.School + ")"
		}
		fmt.Fprintf(e.stdout, "%s %s into group %s%s: students %d added, %d renamed; classes %d added, %d changed, %d deleted; memberships %d added, %d removed\n",
			verb, fs.Arg(0), *group, school, res.StudentsAdded, res.StudentsRenamed, res.ClassesAdded, res.ClassesChanged, res.ClassesDeleted,
			res.MembersAdded, res.MembersRemoved)
		skipped := make([]string, len(res.Skipped))
		for i, sk := range res.Skipped {
			skipped[i] = fmt.Sprintf("%s line %d (%s): %s", sk.File, sk.Line, sk.SourcedID, sk.Reason)
		}
		listRows(e, fmt.Sprintf("skipped %s:", analytics.Plural(len(res.Skipped), "row")), skipped)
		listWarnings(e, res.Warnings)
		return nil
	})
}

// importDistrictRoster imports a district's bundle and says what it did
// of each school.
func importDistrictRoster(e *env, p *platform.Platform, district, file string, b *roster.Bundle, dryRun bool) error {
	res, err := p.ImportDistrictRoster(e.ctx, district, b, dryRun)
	if err != nil {
		return err
	}
	verb := "imported"
	if res.DryRun {
		verb = "would import (dry run, nothing changed)"
	}
	fmt.Fprintf(e.stdout, "%s %s into district %s: %s\n", verb, file, district, analytics.Plural(len(res.Schools), "school"))
	for _, s := range res.Schools {
		made := ""
		if s.Created {
			made = " (new)"
		}
		fmt.Fprintf(e.stdout, "  group %s%s: students %d added, %d renamed; classes %d added, %d changed, %d deleted; memberships %d added, %d removed\n",
			s.GroupID, made, s.StudentsAdded, s.StudentsRenamed, s.ClassesAdded, s.ClassesChanged, s.ClassesDeleted, s.MembersAdded, s.MembersRemoved)
	}
	listWarnings(e, res.Warnings)
	return nil
}
