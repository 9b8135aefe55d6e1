package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"groupanalytics/internal/bench"
)

func runBench(e *env, args []string) error {
	fs, stores := flags(e, "bench")
	db := fs.Lookup("db")
	db.DefValue, db.Usage = "", "SQLite file to make afresh (default: a temporary one), or a PostgreSQL server URL to make a database on"
	_ = db.Value.Set("")
	fs.Lookup("usage").Usage = "ClickHouse usage URL: the run makes a database of its own on these shards (needs a PostgreSQL --db)"
	quick := fs.Bool("quick", false, "a small scale that finishes in under a minute")
	scale := bench.Full
	fs.IntVar(&scale.Students, "students", scale.Students, "students in the main group")
	fs.IntVar(&scale.Days, "days", scale.Days, "days of events")
	fs.Float64Var(&scale.Active, "active", scale.Active, "share of students active on a day")
	fs.IntVar(&scale.EventsPerDay, "events-per-day", scale.EventsPerDay, "events per active student-day")
	fs.IntVar(&scale.OtherGroups, "other-groups", scale.OtherGroups, "groups beside the main one")
	fs.IntVar(&scale.OtherSize, "other-size", scale.OtherSize, "students in each other group")
	fs.Float64Var(&scale.SessionShare, "session-share", scale.SessionShare, "share of events that are live lecture sessions")
	fs.StringVar(&scale.ChatMix, "chat-mix", scale.ChatMix, "weights of the chat types")
	fs.Uint64Var(&scale.Seed, "seed", scale.Seed, "seed of the generated data")
	requests := fs.Int("requests", 100, "sequential requests per report scenario")
	baselineRuns := fs.Int("baseline-runs", 5, "runs of each baseline query")
	concurrency := fs.Int("concurrency", 4, "clients of the throughput runs")
	throughput := fs.Duration("throughput", 3*time.Second, "length of each throughput run")
	ingest := fs.Int("ingest", 300_000, "events to send through POST /v1/events")
	ingestOne := fs.Int("ingest-one", 20_000, "events to send through POST /v1/events one per request")
	ingestConns := fs.Int("ingest-conns", 4, "connections sending events")
	refusals := fs.Int("refusals", 5000, "the most refused requests per cause, asked until a difference of 20 µs between causes would show (0: none)")
	fh := bench.Firehose{Groups: 1000, Conns: 256, Duration: 30 * time.Second}
	fs.DurationVar(&fh.Duration, "firehose", fh.Duration, "how long each of the firehose's two phases sends one event per request, from new students, then from those who sent before (0: no firehose)")
	fs.IntVar(&fh.Groups, "firehose-groups", fh.Groups, "groups the firehose sends to")
	fs.IntVar(&fh.Conns, "firehose-conns", fh.Conns, "connections of the firehose")
	jsonOut := fs.String("json", "", "also write the figures as JSON to this file")
	keep := fs.Bool("keep", false, "keep the data after the run")
	warehouse := fs.String("warehouse", "", "also: measure a backfill of the district's warehouse (its schools: --other-groups) after the rest; only: that alone")
	if err := parse(e, fs, args, false); err != nil {
		return err
	}
	if *warehouse != "" && *warehouse != "also" && *warehouse != "only" {
		return fmt.Errorf("invalid --warehouse %q: expected also or only", *warehouse)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *quick {
		// Quick scale, unless a flag says otherwise.
		q := bench.Quick
		for name, set := range map[string]func(){
			"students": func() { scale.Students = q.Students }, "days": func() { scale.Days = q.Days },
			"other-groups": func() { scale.OtherGroups = q.OtherGroups }, "other-size": func() { scale.OtherSize = q.OtherSize },
			"requests": func() { *requests = 20 }, "baseline-runs": func() { *baselineRuns = 3 },
			"throughput": func() { *throughput = 500 * time.Millisecond }, "ingest": func() { *ingest = 20_000 },
			"ingest-one": func() { *ingestOne = 2_000 }, "refusals": func() { *refusals = 200 }, "firehose": func() { fh.Duration = 3 * time.Second },
			"firehose-groups": func() { fh.Groups = 100 }, "firehose-conns": func() { fh.Conns = 64 },
		} {
			if !given[name] {
				set()
			}
		}
	}
	binary, err := os.Executable()
	if err != nil {
		return err
	}
	res, err := bench.Run(e.ctx, bench.Config{DB: stores.db, Usage: stores.usage, Keep: *keep, Scale: scale, Requests: *requests,
		Baseline: *baselineRuns, Concurrency: *concurrency, Throughput: *throughput, Ingest: *ingest, IngestOne: *ingestOne,
		IngestConns: *ingestConns, Refusals: *refusals, Firehose: fh, Binary: binary, Warehouse: *warehouse, Out: e.stdout})
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", *jsonOut)
	}
	return nil
}
