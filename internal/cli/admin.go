package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/digest"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

func table(e *env, header string, rows func(w io.Writer)) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	tw.Flush()
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return analytics.FormatTime(*t)
}

func groupCreate(e *env, args []string) error {
	fs, db := flags(e, "group create")
	id := fs.String("id", "", "group id: letters, digits, '.', '_' or '-'")
	name := fs.String("name", "", "display name (default: the id)")
	tz := fs.String("tz", "UTC", "IANA time zone, e.g. Europe/Berlin")
	return withPlatform(e, fs, db, args, false, []string{"id"}, func(p *platform.Platform) error {
		g, err := p.CreateGroup(e.ctx, *id, *name, *tz)
		if err == nil {
			fmt.Fprintf(e.stdout, "created group %s (%s, %s)\n", g.ID, g.Name, g.TimeZone)
		}
		return err
	})
}

func groupRename(e *env, args []string) error {
	fs, db := flags(e, "group rename")
	group := fs.String("group", "", "group id")
	name := fs.String("name", "", "the new display name")
	return withPlatform(e, fs, db, args, false, []string{"group", "name"}, func(p *platform.Platform) error {
		g, err := p.RenameGroup(e.ctx, *group, *name)
		if err == nil {
			fmt.Fprintf(e.stdout, "renamed group %s: %s\n", g.ID, g.Name)
		}
		return err
	})
}

func groupSetTimeZone(e *env, args []string) error {
	fs, db := flags(e, "group set-timezone")
	group := fs.String("group", "", "group id")
	tz := fs.String("tz", "", "IANA time zone, e.g. Europe/Berlin")
	return withPlatform(e, fs, db, args, false, []string{"group", "tz"}, func(p *platform.Platform) error {
		g, err := p.SetTimeZone(e.ctx, *group, *tz)
		if err == nil {
			fmt.Fprintf(e.stdout, "group %s is on %s: its rollups were rebuilt in it\n", g.ID, g.TimeZone)
		}
		return err
	})
}

// cellSize shows a group's minCellSize in a list.
func cellSize(size int) string {
	if size == 0 {
		return "off"
	}
	return strconv.Itoa(size)
}

func groupSetMinCellSize(e *env, args []string) error {
	fs, db := flags(e, "group set-min-cell-size")
	group := fs.String("group", "", "group id")
	size := fs.Int("size", 0, fmt.Sprintf("the fewest students a group report's figure shown may come from: 2 to %d, or 0 for off", platform.MaxMinCellSize))
	return withPlatform(e, fs, db, args, false, []string{"group", "size"}, func(p *platform.Platform) error {
		g, err := p.SetMinCellSize(e.ctx, *group, *size)
		switch {
		case err != nil:
			return err
		case g.MinCellSize == 0:
			fmt.Fprintf(e.stdout, "group %s shows every figure\n", g.ID)
		default:
			fmt.Fprintf(e.stdout, "group %s hides figures of fewer than %d students\n", g.ID, g.MinCellSize)
		}
		return nil
	})
}

func groupSetRetention(e *env, args []string) error {
	fs, db := flags(e, "group set-retention")
	group := fs.String("group", "", "group id")
	keep := fs.String("keep", "", fmt.Sprintf("how many days of usage the group keeps, today included: %dd to %dd, or off for all", platform.MinRetention, analytics.MaxDays))
	return withPlatform(e, fs, db, args, false, []string{"group", "keep"}, func(p *platform.Platform) error {
		g, err := p.SetRetention(e.ctx, *group, *keep)
		switch {
		case err != nil:
			return err
		case g.Retention == 0:
			fmt.Fprintf(e.stdout, "group %s keeps all its usage\n", g.ID)
		default:
			fmt.Fprintf(e.stdout, "group %s keeps %s of usage: the next retention run deletes the usage of older days\n", g.ID, g.Retention)
		}
		return nil
	})
}

// retentionRun deletes now the usage that groups keep no longer: what a
// serving process does every hour.
func retentionRun(e *env, args []string) error {
	fs, db := flags(e, "retention run")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		receipts, err := p.ExpireUsage(e.ctx, p.Now())
		for _, r := range receipts {
			fmt.Fprintf(e.stdout, "group %s: deleted the usage before %s (%s)\n", r.GroupID, r.KeptFrom, deletedList(r.Deleted))
		}
		if err == nil && len(receipts) == 0 {
			fmt.Fprintln(e.stdout, "nothing to delete: every group's usage is within its retention")
		}
		return err
	})
}

// deletedList tells what a deletion removed, store by store and table by
// table.
func deletedList(deleted []analytics.Deleted) string {
	var parts []string
	for _, d := range deleted {
		parts = append(parts, fmt.Sprintf("%s %s %d", d.Store, d.Table, d.Rows))
	}
	return cmp.Or(strings.Join(parts, ", "), "nothing")
}

func groupDelete(e *env, args []string) error {
	fs, db := flags(e, "group delete")
	group := fs.String("group", "", "group id")
	yes := fs.Bool("yes", false, "yes, erase it and everything of it for good")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		if !*yes {
			return fmt.Errorf("group delete erases group %s and all its usage for good: add --yes", *group)
		}
		if err := p.DeleteGroup(e.ctx, *group); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "deleted group %s: its usage, students, keys, plans and digest recipients are gone\n", *group)
		return nil
	})
}

// groupList lists the groups; with --usage on ClickHouse, each group's
// shard too ("-" for a group with no usage yet, which has none).
func groupList(e *env, args []string) error {
	fs, db := flags(e, "group list")
	return withStores(e, fs, db, args, false, nil, func(s *stores.Stores) error {
		groups, err := platform.New(s.Directory, s.Usage).Groups(e.ctx)
		if err != nil {
			return err
		}
		header, shardOf := "ID\tNAME\tTIME ZONE\tCREATED\tMIN CELL SIZE\tRETENTION", map[string]string{}
		if s.Shards != nil {
			header += "\tSHARD"
			loads, err := s.Shards.Loads(e.ctx)
			if err != nil {
				return err
			}
			for _, l := range loads {
				for _, g := range l.Groups {
					shardOf[g] = l.Shard
				}
			}
		}
		table(e, header, func(w io.Writer) {
			for _, g := range groups {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s", g.ID, g.Name, g.TimeZone, analytics.FormatTime(g.Created), cellSize(g.MinCellSize), g.Retention)
				if s.Shards != nil {
					fmt.Fprintf(w, "\t%s", cmp.Or(shardOf[g.ID], "-"))
				}
				fmt.Fprintln(w)
			}
		})
		return nil
	})
}

func groupMove(e *env, args []string) error {
	fs, db := flags(e, "group move")
	group := fs.String("group", "", "group id")
	shard := fs.String("shard", "", "the shard to move to, host:port as in --usage")
	return withShards(e, fs, db, args, []string{"group", "shard"}, func(s *stores.Stores) error {
		if _, err := s.Directory.Group(e.ctx, *group); err != nil {
			return err
		}
		res, err := s.Shards.MoveGroup(e.ctx, *group, *shard)
		switch {
		case err != nil:
			return err
		case res.From == "":
			fmt.Fprintf(e.stdout, "group %s holds no usage yet: placed on %s\n", *group, res.To)
		case res.From == res.To:
			fmt.Fprintf(e.stdout, "group %s is already on %s\n", *group, res.To)
		default:
			fmt.Fprintf(e.stdout, "moved group %s from %s to %s: %s in %s\n", *group, res.From, res.To,
				analytics.Plural(int(res.Events), "event"), res.Took.Round(time.Millisecond))
		}
		return nil
	})
}

func shardList(e *env, args []string) error {
	fs, db := flags(e, "shard list")
	return withShards(e, fs, db, args, nil, func(s *stores.Stores) error {
		loads, err := s.Shards.Loads(e.ctx)
		table(e, "SHARD\tGROUPS\tEVENTS\tSTATE\tGROUP IDS", func(w io.Writer) {
			for _, l := range loads {
				state := "up"
				if l.Err != nil {
					state = "down: " + describe(l.Err)
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", l.Shard, len(l.Groups), l.Events, state, strings.Join(l.Groups, " "))
			}
		})
		return err
	})
}

func planSet(e *env, args []string) error {
	fs, db := flags(e, "plan set")
	group := fs.String("group", "", "group id")
	start := fs.String("start", "", "first day (2025-09-01) or instant (RFC 3339); default now")
	end := fs.String("end", "", "last day, included, or instant the plan ends; default open-ended")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		plan, err := p.AddPlan(e.ctx, *group, *start, *end)
		if err == nil {
			// The bounds as typed, then the instants stored (an end date's
			// instant is the start of the day after it).
			typed := cmp.Or(*start, "now")
			switch {
			case *end == "":
				typed += ", open-ended"
			case strings.Contains(*end, "T"):
				typed += " until " + *end
			default:
				typed += " through " + *end
			}
			stored := "from " + analytics.FormatTime(plan.Starts)
			if plan.Ends != nil {
				stored += " until " + analytics.FormatTime(*plan.Ends)
			}
			fmt.Fprintf(e.stdout, "added plan %d to group %s: %s (%s)\n", plan.ID, plan.GroupID, typed, stored)
		}
		return err
	})
}

func planCancel(e *env, args []string) error {
	fs, db := flags(e, "plan cancel")
	group := fs.String("group", "", "group id")
	id := fs.Int64("plan", 0, "plan number, as plan list shows it")
	return withPlatform(e, fs, db, args, false, []string{"group", "plan"}, func(p *platform.Platform) error {
		plan, err := p.CancelPlan(e.ctx, *group, *id)
		if err == nil {
			fmt.Fprintf(e.stdout, "cancelled plan %d of group %s at %s\n", plan.ID, plan.GroupID, when(plan.Cancelled))
		}
		return err
	})
}

func planList(e *env, args []string) error {
	fs, db := flags(e, "plan list")
	group := fs.String("group", "", "group id")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		plans, err := p.Plans(e.ctx, *group)
		if err != nil {
			return err
		}
		g, err := p.Group(e.ctx, *group)
		if err != nil {
			return err
		}
		loc, err := g.Location()
		if err != nil {
			return err
		}
		now := time.Now()
		// The days as set (an end date is the last day), then the instants.
		table(e, "PLAN\tFIRST DAY\tLAST DAY\tSTARTS\tENDS\tCANCELLED\tVALID NOW", func(w io.Writer) {
			for _, pl := range plans {
				first, last := pl.Days(loc)
				lastDay := "-"
				if last != nil {
					lastDay = last.String()
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%t\n", pl.ID, first, lastDay, analytics.FormatTime(pl.Starts), when(pl.Ends), when(pl.Cancelled), pl.ValidAt(now))
			}
		})
		return nil
	})
}

func keyCreate(e *env, args []string) error {
	fs, db := flags(e, "key create")
	group := fs.String("group", "", "group id")
	label := fs.String("label", "", "what the key is for")
	var classes flagList
	fs.Var(&classes, "class", "a class the key sees, and no other (a teacher's key); repeat it for each")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		k, secret, err := p.CreateKey(e.ctx, *group, *label, classes...)
		if err == nil {
			seeing := ""
			if k.ForClasses {
				seeing = ", seeing only " + sees(k)
			}
			fmt.Fprintf(e.stdout, "created key %s for group %s%s. Its secret is shown only now:\n%s\n", k.ID, k.GroupID, seeing, secret)
		}
		return err
	})
}

// flagList is a flag given once for each of its values.
type flagList []string

func (l *flagList) String() string         { return strings.Join(*l, ",") }
func (l *flagList) Set(value string) error { *l = append(*l, value); return nil }

// sees says what a key sees: its group, or a teacher's key's classes.
func sees(k analytics.APIKey) string {
	if !k.ForClasses {
		return "the group"
	}
	return "class " + cmp.Or(strings.Join(k.Classes, ", "), "(none left)")
}

func keyList(e *env, args []string) error {
	fs, db := flags(e, "key list")
	group := fs.String("group", "", "group id")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		keys, err := p.Keys(e.ctx, *group)
		table(e, "KEY\tPREFIX\tLABEL\tCREATED\tREVOKED\tLAST USED\tSEES", func(w io.Writer) {
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Label, analytics.FormatTime(k.Created), when(k.Revoked), when(k.LastUsed), sees(k))
			}
		})
		return err
	})
}

func keyRevoke(e *env, args []string) error {
	fs, db := flags(e, "key revoke")
	group := fs.String("group", "", "group id")
	key := fs.String("key", "", "key id, as key list shows it (or its prefix, gak_…)")
	return withPlatform(e, fs, db, args, false, []string{"group", "key"}, func(p *platform.Platform) error {
		id := *key
		if strings.HasPrefix(id, "gak_") {
			keys, err := p.Keys(e.ctx, *group)
			if err != nil {
				return err
			}
			if id, err = idOfPrefix(id, "key", keys, func(k analytics.APIKey) (string, string) { return k.ID, k.Prefix }); err != nil {
				return err
			}
		}
		err := p.RevokeKey(e.ctx, *group, id)
		if err == nil {
			fmt.Fprintf(e.stdout, "revoked key %s of group %s\n", id, *group)
		}
		return err
	})
}

// idOfPrefix returns the id of the one key or token (what) whose prefix,
// as the lists show it (with or without its "…"), is given: operators
// copy it from there, and a secret is never shown again.
func idOfPrefix[T any](given, what string, items []T, idAndPrefix func(T) (string, string)) (string, error) {
	prefix := strings.TrimSuffix(given, "…")
	var matches []string
	for _, item := range items {
		if id, p := idAndPrefix(item); p == prefix {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("no %s has the prefix %q: give the %s id, as %s list shows it", what, given, what, what)
	default:
		return "", fmt.Errorf("%d %ss have the prefix %q: give the %s id instead (%s)", len(matches), what, prefix, what, strings.Join(matches, ", "))
	}
}

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

func tokenCreate(e *env, args []string) error {
	fs, db := flags(e, "token create")
	label := fs.String("label", "", "what the token is for")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		t, secret, err := p.CreateToken(e.ctx, *label)
		if err == nil {
			fmt.Fprintf(e.stdout, "created platform token %s. Its secret is shown only now:\n%s\n", t.ID, secret)
		}
		return err
	})
}

func tokenList(e *env, args []string) error {
	fs, db := flags(e, "token list")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		tokens, err := p.Tokens(e.ctx)
		table(e, "TOKEN\tPREFIX\tLABEL\tCREATED\tREVOKED", func(w io.Writer) {
			for _, t := range tokens {
				fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\n", t.ID, t.Prefix, t.Label, analytics.FormatTime(t.Created), when(t.Revoked))
			}
		})
		return err
	})
}

func tokenRevoke(e *env, args []string) error {
	fs, db := flags(e, "token revoke")
	token := fs.String("token", "", "token id, as token list shows it (or its prefix, gat_…)")
	return withPlatform(e, fs, db, args, false, []string{"token"}, func(p *platform.Platform) error {
		id := *token
		if strings.HasPrefix(id, "gat_") {
			tokens, err := p.Tokens(e.ctx)
			if err != nil {
				return err
			}
			if id, err = idOfPrefix(id, "token", tokens, func(t analytics.PlatformToken) (string, string) { return t.ID, t.Prefix }); err != nil {
				return err
			}
		}
		err := p.RevokeToken(e.ctx, id)
		if err == nil {
			fmt.Fprintf(e.stdout, "revoked platform token %s\n", id)
		}
		return err
	})
}

// runImport reads NDJSON events, one per line (blank lines skipped), and
// stores them only if every line is valid.
func runImport(e *env, args []string) error {
	fs, db := flags(e, "import")
	return withPlatform(e, fs, db, args, true, nil, func(p *platform.Platform) error {
		in := e.stdin
		if name := fs.Arg(0); name != "" && name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		var batch []json.RawMessage
		var lineNos []int
		bar := newProgress(e)
		defer bar.done()
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				batch = append(batch, bytes.Clone(line))
				lineNos = append(lineNos, n)
			}
			bar.show(false, "reading: %d lines", n)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("reading line %d: %w", len(lineNos)+1, err)
		}
		bar.show(true, "checking and storing %d events, all or nothing…", len(batch))
		res, err := p.Ingest(e.ctx, batch, true)
		bar.done()
		if err != nil {
			return err
		}
		if len(res.Rejected) > 0 {
			for _, r := range res.Rejected {
				fmt.Fprintf(e.stderr, "line %d: %s\n", lineNos[r.Index], r.Reason)
			}
			return fmt.Errorf("%d of %d lines rejected; nothing was imported", len(res.Rejected), len(batch))
		}
		fmt.Fprintf(e.stdout, "imported %s (%d new, %s)\n", analytics.Plural(len(batch), "event"), res.Accepted, analytics.Plural(res.Duplicates, "duplicate"))
		return nil
	})
}

func runRebuild(e *env, args []string) error {
	fs, db := flags(e, "rebuild")
	group := fs.String("group", "", "group id (default: every group)")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		start := time.Now()
		bar := newProgress(e)
		defer bar.done()
		groups, err := p.Rebuild(e.ctx, *group, func(done, total int, next string) {
			bar.show(true, "rebuilding: %d of %d groups done, now %s", done, total, next)
		})
		bar.done()
		if err == nil {
			fmt.Fprintf(e.stdout, "rebuilt the rollups of %s in %s\n", analytics.Plural(len(groups), "group"), time.Since(start).Round(time.Millisecond))
		}
		return err
	})
}

func runBackup(e *env, args []string) error {
	fs, db := flags(e, "backup")
	to := fs.String("to", "", "file to write the copy to: replaced whole, or left as it was if the copy fails")
	if err := parse(e, fs, args, false, "to"); err != nil {
		return err
	}
	if db.usage != "" {
		return errors.New("backup copies the SQLite store of --db; a usage store on ClickHouse is backed up on its servers (see docs/operating.md, Backups)")
	}
	start := time.Now()
	if err := stores.Backup(e.ctx, db.db, *to); err != nil {
		return err
	}
	info, err := os.Stat(*to)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "backed up %s to %s (%.1f MB) in %s\n", db.db, *to, float64(info.Size())/1e6, time.Since(start).Round(time.Millisecond))
	return nil
}

func recipientAdd(e *env, args []string) error {
	fs, db := flags(e, "recipient add")
	group := fs.String("group", "", "group id")
	address := fs.String("address", "", "email address")
	class := fs.String("class", "", "a class of the group: its teacher gets the class's digest (default: the school's)")
	return withPlatform(e, fs, db, args, false, []string{"group", "address"}, func(p *platform.Platform) error {
		r, err := p.AddRecipient(e.ctx, *group, *address, *class)
		switch {
		case err != nil:
		case r.ClassID != "":
			fmt.Fprintf(e.stdout, "%s will receive the weekly digest of class %s of group %s\n", r.Address, r.ClassID, r.GroupID)
		default:
			fmt.Fprintf(e.stdout, "%s will receive the weekly digest of group %s\n", r.Address, r.GroupID)
		}
		return err
	})
}

func recipientList(e *env, args []string) error {
	fs, db := flags(e, "recipient list")
	group := fs.String("group", "", "group id")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		recipients, err := p.Recipients(e.ctx, *group)
		table(e, "ADDRESS\tADDED\tCLASS", func(w io.Writer) {
			for _, r := range recipients {
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.Address, analytics.FormatTime(r.Created), cmp.Or(r.ClassID, "-"))
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
				fmt.Fprintf(w, "%s\t%s %s\t%s\t%s %s\t%s to %s\t%s\t%s\n", analytics.FormatTime(a.At), a.KeyPrefix, cmp.Or(a.KeyLabel, "-"),
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

func recipientRemove(e *env, args []string) error {
	fs, db := flags(e, "recipient remove")
	group := fs.String("group", "", "group id")
	address := fs.String("address", "", "email address")
	return withPlatform(e, fs, db, args, false, []string{"group", "address"}, func(p *platform.Platform) error {
		err := p.RemoveRecipient(e.ctx, *group, *address)
		if err == nil {
			fmt.Fprintf(e.stdout, "%s will no longer receive the weekly digest of group %s\n", *address, *group)
		}
		return err
	})
}

func digestSend(e *env, args []string) error {
	fs, db := flags(e, "digest send")
	group := fs.String("group", "", "group id")
	to := fs.String("to", "", "the address to send it to")
	week := fs.String("week", "", "the ISO week, e.g. 2026-W46 (default: the last week that has ended)")
	mail := addMailFlags(fs)
	return withStores(e, fs, db, args, false, []string{"group", "to"}, func(s *stores.Stores) error {
		if mail.smtpURL == "" {
			return errors.New("digest send needs --smtp-url (and --public-url)")
		}
		sender, err := mail.sender(s, quietLog(e))
		if err != nil {
			return err
		}
		address, err := platform.CheckAddress(*to)
		if err != nil {
			return err
		}
		g, err := s.Directory.Group(e.ctx, *group)
		if err != nil {
			return err
		}
		loc, err := g.Location()
		if err != nil {
			return err
		}
		w := digest.DueWeek(time.Now(), loc)
		if *week != "" {
			if w, err = analytics.ParseWeek(*week); err != nil {
				return err
			}
		}
		if err := sender.SendTrial(e.ctx, g.ID, w, address); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "sent the digest of group %s for %s to %s\n", g.ID, w, address)
		return nil
	})
}
