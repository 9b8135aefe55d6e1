package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
)

func studentCommand(e *env, name string, args []string, withName bool, fn func(p *platform.Platform, group, id, studentName string) error) error {
	fs, db := flags(e, name)
	group := fs.String("group", "", "group id")
	id := fs.String("id", "", "student id")
	required := []string{"group", "id"}
	studentName := new(string)
	if withName {
		studentName = fs.String("name", "", "display name")
		required = append(required, "name")
	}
	return withPlatform(e, fs, db, args, false, required, func(p *platform.Platform) error {
		return fn(p, *group, *id, *studentName)
	})
}

func studentAdd(e *env, args []string) error {
	return studentCommand(e, "student add", args, true, func(p *platform.Platform, group, id, name string) error {
		_, err := p.AddStudent(e.ctx, group, id, name)
		if err == nil {
			fmt.Fprintf(e.stdout, "added student %s (%s) to group %s\n", id, name, group)
		}
		return err
	})
}

func studentRename(e *env, args []string) error {
	return studentCommand(e, "student rename", args, true, func(p *platform.Platform, group, id, name string) error {
		_, err := p.RenameStudent(e.ctx, group, id, name)
		if err == nil {
			fmt.Fprintf(e.stdout, "renamed student %s of group %s to %s\n", id, group, name)
		}
		return err
	})
}

func studentDelete(e *env, args []string) error {
	return studentCommand(e, "student delete", args, false, func(p *platform.Platform, group, id, _ string) error {
		err := p.DeleteStudent(e.ctx, group, id)
		if err == nil {
			fmt.Fprintf(e.stdout, "deleted student %s of group %s and all their usage\n", id, group)
		}
		return err
	})
}

func studentExport(e *env, args []string) error {
	fs, db := flags(e, "student export")
	group := fs.String("group", "", "group id")
	id := fs.String("id", "", "student id")
	to := fs.String("to", "", "the zip file to write")
	return withPlatform(e, fs, db, args, false, []string{"group", "id", "to"}, func(p *platform.Platform) error {
		d, err := p.StudentData(e.ctx, *group, *id)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(*to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if err := errors.Join(httpapi.WriteStudentArchive(f, d, time.Now()), f.Sync(), f.Close()); err != nil {
			os.Remove(*to)
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s: student %s of group %s, %s, %s\n", *to, *id, *group,
			analytics.Plural(len(d.Events), "event"), analytics.Plural(len(d.Access), "access record"))
		return nil
	})
}

func studentList(e *env, args []string) error {
	fs, db := flags(e, "student list")
	group := fs.String("group", "", "group id")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		students, err := p.Students(e.ctx, *group)
		analytics.SortStudents(students)
		table(e, "ID\tNAME", func(w io.Writer) {
			for _, s := range students {
				fmt.Fprintf(w, "%s\t%s\n", s.ID, s.Name)
			}
		})
		return err
	})
}

func accessLogList(e *env, args []string) error {
	fs, db := flags(e, "access-log")
	group := fs.String("group", "", "group id")
	student := fs.String("student", "", "only the entries about this student")
	since := fs.String("since", "", "only the entries from this day on (YYYY-MM-DD, UTC)")
	limit := fs.Int("limit", 100, "at most this many entries")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		f := analytics.AccessFilter{StudentID: *student, Limit: *limit}
		if *since != "" {
			t, err := time.Parse(time.DateOnly, *since)
			if err != nil {
				return analytics.Errorf(analytics.Invalid, "Invalid --since: expected YYYY-MM-DD, got %q", *since)
			}
			f.Since = t
		}
		entries, _, err := p.AccessLog(e.ctx, *group, f)
		table(e, "AT\tKEY\tCLIENT\tENDPOINT\tDAYS\tINTERVAL\tSTUDENTS", func(w io.Writer) {
			for _, a := range entries {
				students := "all"
				if a.StudentsAsked > 0 {
					students = strings.Join(a.StudentIDs, " ")
					if a.ErasedStudents > 0 {
						students = strings.TrimSpace(fmt.Sprintf("%s (+%d erased)", students, a.ErasedStudents))
					}
				}
				if len(a.ClassIDs) > 0 {
					students += " of class " + strings.Join(a.ClassIDs, " ")
				}
				fmt.Fprintf(w, "%s\t%s %s\t%s\t%s %s\t%s to %s\t%s\t%s\n", analytics.FormatTime(a.At), a.KeyPrefix, cmp.Or(a.KeyLabel, "-")+districtOf(a),
					a.Client, a.Endpoint, a.Format, a.StartDate, a.EndDate, a.Interval, students)
			}
		})
		return err
	})
}

func receiptList(e *env, args []string) error {
	fs, db := flags(e, "receipt list")
	group := fs.String("group", "", "group id (default: every group's)")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		receipts, err := p.Receipts(e.ctx, *group)
		table(e, "FINISHED\tGROUP\tACTION\tSTUDENT\tBY\tDELETED", func(w io.Writer) {
			for _, r := range receipts {
				action := r.Action
				if r.Action == analytics.ActionUsageExpired {
					action += " before " + r.KeptFrom.String()
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", analytics.FormatTime(r.Finished), r.GroupID, action,
					cmp.Or(r.StudentID, "-"), r.RequestedBy, deletedList(r.Deleted))
			}
		})
		return err
	})
}

// districtOf names the district of an entry's key, when it is a district's.
func districtOf(a analytics.AccessEntry) string {
	if a.KeyDistrict == "" {
		return ""
	}
	return " (district " + a.KeyDistrict + ")"
}
