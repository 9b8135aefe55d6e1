package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
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
