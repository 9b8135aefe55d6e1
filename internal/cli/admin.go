package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"groupanalytics/internal/analytics"
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

func groupSetInactiveAfter(e *env, args []string) error {
	fs, db := flags(e, "group set-inactive-after")
	group := fs.String("group", "", "group id")
	days := fs.Int("days", 0, fmt.Sprintf("the days without use after which a student who used the service counts as stopped: 1 to %d", analytics.MaxInactiveAfter))
	return withPlatform(e, fs, db, args, false, []string{"group", "days"}, func(p *platform.Platform) error {
		g, err := p.SetInactiveAfter(e.ctx, *group, *days)
		if err == nil {
			fmt.Fprintf(e.stdout, "group %s counts a student as stopped after %d days without use\n", g.ID, g.InactiveAfter)
		}
		return err
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
				switch {
				case l.Err != nil:
					state = "down: " + describe(l.Err)
				case len(l.Down) > 0:
					state = "up, replica down: " + strings.Join(l.Down, ", ")
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
	seats := fs.Int("seats", 0, "how many students the plan covers (default: it does not say)")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		plan, err := p.AddPlan(e.ctx, *group, *start, *end, *seats)
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
		table(e, "PLAN\tFIRST DAY\tLAST DAY\tSTARTS\tENDS\tCANCELLED\tVALID NOW\tSEATS", func(w io.Writer) {
			for _, pl := range plans {
				first, last := pl.Days(loc)
				lastDay := "-"
				if last != nil {
					lastDay = last.String()
				}
				seats := "-"
				if pl.Seats > 0 {
					seats = fmt.Sprint(pl.Seats)
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%t\t%s\n", pl.ID, first, lastDay, analytics.FormatTime(pl.Starts), when(pl.Ends), when(pl.Cancelled), pl.ValidAt(now), seats)
			}
		})
		return nil
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
	to := fs.String("to", "", "SQLite: the file to write the copy to, replaced whole, or left as it was if the copy fails; with --usage: a new directory")
	if err := parse(e, fs, args, false, "to"); err != nil {
		return err
	}
	start := time.Now()
	if db.usage != "" {
		b, err := stores.BackupTier(e.ctx, stores.Config{DB: db.db, Usage: db.usage, Log: quietLog(e)}, *to)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "backed up %s as of %s in %s:\n", *to, b.Began.Format(time.RFC3339), time.Since(start).Round(time.Millisecond))
		printTier(e, b)
		return nil
	}
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

func runRestore(e *env, args []string) error {
	fs, db := flags(e, "restore")
	from := fs.String("from", "", "the directory of a backup made with --usage")
	if err := parse(e, fs, args, false, "from", "usage"); err != nil {
		return err
	}
	start := time.Now()
	b, err := stores.RestoreTier(e.ctx, stores.Config{DB: db.db, Usage: db.usage, Log: quietLog(e)}, *from)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "restored %s (as of %s) in %s, every replica checked:\n", *from, b.Began.Format(time.RFC3339), time.Since(start).Round(time.Millisecond))
	printTier(e, b)
	return nil
}

// printTier lists what a tier backup holds of each shard.
func printTier(e *env, b *stores.TierBackup) {
	fmt.Fprintf(e.stdout, "  directory: %s\n", b.Directory)
	for _, sh := range b.Shards {
		fmt.Fprintf(e.stdout, "  shard %s (from %s):", sh.Shard, sh.Replica)
		for _, t := range sh.Tables {
			fmt.Fprintf(e.stdout, " %s %d rows in %d parts;", t.Table, t.Rows(), len(t.Parts))
		}
		fmt.Fprintln(e.stdout)
	}
}
