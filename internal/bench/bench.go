// Package bench measures how fast reports and ingestion are, through HTTP
// on loopback against a real server process, beside a baseline: the plain
// SQL a competent developer would write against the raw events, timed in
// the same run and checked to give the same numbers.
package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

// Config is one benchmark run.
type Config struct {
	DB          string // a SQLite file (made afresh), or a PostgreSQL server URL (a database is made on it)
	Usage       string // a ClickHouse usage URL (a database of the run's own is made on its shards), or empty
	Keep        bool   // keep the data after the run
	Scale       Scale
	Requests    int           // sequential requests per report scenario
	Baseline    int           // runs of each baseline query
	Concurrency int           // clients of the throughput runs
	Throughput  time.Duration // length of each throughput run
	Ingest      int           // events sent through POST /v1/events in batches of 1,000
	IngestOne   int           // events sent through POST /v1/events one per request
	IngestConns int
	Refusals    int      // the most refusals asked of each cause (0: none)
	Firehose    Firehose // none when its Duration is 0
	Binary      string   // the groupanalytics binary to run the server with
	// Warehouse is whether the district's warehouse is measured: "" not,
	// "also" after the rest, "only" alone.
	Warehouse string
	Out       io.Writer
}

// Result is what a run measured. Durations are in milliseconds.
type Result struct {
	Machine          string           `json:"machine"`
	Store            string           `json:"store"`
	Scale            Scale            `json:"scale"`
	Events           int              `json:"events"`
	MainGroupEvents  int              `json:"mainGroupEvents"`
	BulkLoadSeconds  float64          `json:"bulkLoadSeconds"`
	BulkEventsPerSec float64          `json:"bulkEventsPerSec"`
	Reports          []ReportResult   `json:"reports"`
	Floor            ReportResult     `json:"floor"`
	FloorBare        ReportResult     `json:"floorWithoutLimitsAndMetrics"`
	Refusals         RefusalsResult   `json:"refusals"`
	Schools          SchoolsResult    `json:"everySchool"`
	District         *DistrictResult  `json:"district,omitempty"`
	LastUse          LastUseResult    `json:"lastUse"`
	Ingest           IngestResult     `json:"ingest"`
	IngestOne        IngestResult     `json:"ingestOneEventBatches"`
	Firehose         *FirehoseResult  `json:"firehose,omitempty"`
	FirehoseEnrolled *FirehoseResult  `json:"firehoseFromEnrolledStudents,omitempty"`
	AccessLog        []AccessLogCost  `json:"accessLog"`
	SignedIn         []SignedInCost   `json:"signedIn"`
	PeakRSSBytes     int64            `json:"serverPeakRSSBytes"`
	Warehouse        *WarehouseResult `json:"warehouse,omitempty"`
	DiskBytes        int64            `json:"storeBytes"`
	DiskBytesPerEvt  float64          `json:"storeBytesPerEvent"`
	Move             *MoveResult      `json:"move,omitempty"`
	Checks           map[string]error `json:"-"`
}

// ReportResult is the figures of one report scenario.
type ReportResult struct {
	Name          string  `json:"name"`
	Reports       int     `json:"reports"`
	P50           float64 `json:"p50Ms"`
	P95           float64 `json:"p95Ms"`
	P99           float64 `json:"p99Ms"`
	RequestsPerS  float64 `json:"requestsPerSec"`
	BaselineP50   float64 `json:"baselineP50Ms,omitempty"`
	BaselineRatio float64 `json:"baselineOverService,omitempty"`
	FloorRatio    float64 `json:"serviceOverFloor,omitempty"`
	SameAnswer    bool    `json:"sameAnswerAsBaseline"`
	// Bytes is the size of the answer as sent: compressed when the
	// scenario asks for it.
	Bytes    int    `json:"bytes"`
	Encoding string `json:"contentEncoding,omitempty"`
}

// MoveResult is the figures of moving the main group to another shard (a
// report after the move must equal the one before, or the run fails).
type MoveResult struct {
	Events  uint64  `json:"events"`
	Seconds float64 `json:"seconds"`
}

// IngestResult is the figures of ingestion over HTTP.
type IngestResult struct {
	Events       int     `json:"events"`
	BatchSize    int     `json:"batchSize"`
	Connections  int     `json:"connections"`
	EventsPerSec float64 `json:"eventsPerSec"`
}

// scenario is one report request measured.
type scenario struct {
	name, endpoint string
	group          string // whose key asks: bench-main unless set
	r              analytics.DayRange
	params         string // beside startDate and endDate
	// acceptEncoding is sent as Accept-Encoding; empty: none, so that the
	// answer comes uncompressed.
	acceptEncoding string
	baseline       func(b *baseline, group string, r analytics.DayRange) (answer, error)
	// sameAs names the scenario whose answer this one must equal, for one
	// without a baseline of its own.
	sameAs string
	// minCellSize is set on the group while the scenario runs: its answer
	// must equal sameAs's in every figure it does not hide.
	minCellSize int
}

// query is the scenario's query string.
func (sc scenario) query() string {
	q := "startDate=" + sc.r.First.String() + "&endDate=" + sc.r.Last.String()
	if sc.params != "" {
		q += "&" + sc.params
	}
	return q
}

// browserEncodings is what a browser sends as Accept-Encoding.
const browserEncodings = "gzip, deflate, br, zstd"

// answer is a report response reduced to comparable values: by period key
// and student ("" for the group), the metric values in title order, then
// numStudentsUsed for group reports.
type answer map[string][]int64

// Run runs the benchmark and prints its table.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	res := &Result{Machine: machine(), Scale: cfg.Scale}
	st, dsn, serverArgs, closeStores, err := openStores(ctx, cfg, res)
	if err != nil {
		return nil, err
	}
	defer closeStores()
	now := time.Now()
	fmt.Fprintf(cfg.Out, "groupanalytics bench: %s store, %d students in the main group, %d days, %.0f%% active a day, %d events per active day\n",
		res.Store, cfg.Scale.Students, cfg.Scale.Days, 100*cfg.Scale.Active, cfg.Scale.EventsPerDay)
	keys, firehoseKeys, err := load(ctx, cfg, st, now, res)
	if err != nil {
		return nil, err
	}

	srv, prodArgs, warehouseDir, stop, err := startServer(cfg, serverArgs)
	if err != nil {
		return nil, err
	}
	defer stop()
	scenarios, r := scenariosOf(cfg, now)
	measureWarehouse := func() (err error) {
		res.Warehouse, err = measureWarehouse(cfg, srv, warehouseDir, keys.token, keys.other, min(cfg.Scale.OtherGroups, maxDistrictSchools), r)
		return err
	}
	if cfg.Warehouse == "only" {
		if err := measureWarehouse(); err != nil {
			return nil, err
		}
		printWarehouse(cfg.Out, res.Warehouse)
		return res, nil
	}
	bl := &baselines{ctx: ctx, dsn: dsn, st: st, open: map[string]*baseline{}}
	defer bl.close()
	base, err := bl.of("bench-main")
	if err != nil {
		return nil, err
	}
	if err := measureRequests(ctx, cfg, st, srv, serverArgs, prodArgs, keys, scenarios, r, bl, now, res); err != nil {
		return nil, err
	}
	if cfg.Scale.OtherGroups > 0 {
		if err := measureOthers(ctx, cfg, st, srv, keys.district, r, res); err != nil {
			return nil, err
		}
	}
	if err := measureWrites(cfg, srv, keys, firehoseKeys, now, res); err != nil {
		return nil, err
	}
	if res.PeakRSSBytes, err = srv.memory("VmHWM"); err != nil {
		return nil, err
	}
	if cfg.Warehouse == "also" {
		if err := measureWarehouse(); err != nil {
			return nil, err
		}
	}
	if res.DiskBytes, err = storeBytes(ctx, st, base, dsn); err != nil {
		return nil, err
	}
	res.DiskBytesPerEvt = float64(res.DiskBytes) / float64(res.Events+res.Ingest.Events+res.IngestOne.Events)
	if st.Shards != nil {
		if res.Move, err = moveMain(ctx, st, srv.Base, keys.main, scenarios[2]); err != nil {
			return nil, err
		}
	}
	printTable(cfg.Out, res)
	return res, nil
}

// measureRequests measures the requests of one school: the floor (again
// without rate limits and metrics), refusals, the report scenarios, and
// what the access log and a signed-in session cost.
func measureRequests(ctx context.Context, cfg Config, st *stores.Stores, srv *Server, serverArgs, prodArgs []string, keys benchKeys,
	scenarios []scenario, r analytics.DayRange, bl *baselines, now time.Time, res *Result) (err error) {
	floor := scenario{name: "floor: empty group", endpoint: "chat", r: r}
	if res.Floor, _, err = measure(srv.Base, keys.empty, floor, cfg); err != nil {
		return err
	}
	if res.FloorBare, err = measureBareFloor(ctx, cfg, serverArgs, keys.empty, floor); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "floor: p50 %.3f ms with rate limits and metrics, %.3f ms without\n", res.Floor.P50, res.FloorBare.P50)
	if err := timeRefusals(ctx, cfg, st, srv.Base, now, res); err != nil {
		return err
	}
	if err := measureReports(ctx, cfg, srv, st, keys, scenarios, bl, res); err != nil {
		return err
	}
	students := slices.DeleteFunc(slices.Clone(scenarios), func(sc scenario) bool {
		return !strings.Contains(sc.params, "students=true") || sc.acceptEncoding != ""
	})
	if res.AccessLog, err = measureAccessLog(cfg, prodArgs, srv, keys, students); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "measured the access log's cost\n")
	if res.SignedIn, err = measureSignedIn(ctx, cfg, srv, st, keys, students, now); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "measured a signed-in session's cost\n")
	return nil
}

// storeBytes is what the run's stores hold on disk: the ClickHouse
// shards', or the SQL store's.
func storeBytes(ctx context.Context, st *stores.Stores, base *baseline, dsn string) (int64, error) {
	if st.Shards != nil {
		return st.Shards.DiskBytes(ctx)
	}
	return diskBytes(ctx, base.db, st.Directory.Dialect(), dsn)
}

// openStores makes the run's stores (a new SQLite file or databases of
// their own) and opens them; it returns the directory's DSN, the
// server's arguments naming them, and what closes and drops them.
func openStores(ctx context.Context, cfg Config, res *Result) (st *stores.Stores, dsn string, serverArgs []string, closeAll func(), err error) {
	dsn, cleanup, err := prepareStore(ctx, cfg)
	if err != nil {
		return nil, "", nil, nil, err
	}
	usageURL, err := usageDatabase(cfg)
	if err == nil {
		st, err = stores.Open(ctx, stores.Config{DB: dsn, Usage: usageURL, Create: true})
	}
	if err != nil {
		cleanup()
		return nil, "", nil, nil, err
	}
	closeAll = func() { st.Close(); cleanup() }
	res.Store = st.Directory.Dialect()
	serverArgs = []string{"--db", dsn}
	if ch := st.Shards; ch != nil {
		if !cfg.Keep {
			closeAll = func() { ch.DropDatabase(context.Background()); st.Close(); cleanup() }
		}
		serverArgs = append(serverArgs, "--usage", usageURL)
		shards := fmt.Sprintf("%d shards", len(ch.Shards()))
		if replicas := strings.Count(ch.Shards()[0], "|") + 1; replicas > 1 {
			shards += fmt.Sprintf(" of %d replicas", replicas)
		}
		res.Store = fmt.Sprintf("clickhouse (%s; directory on %s)", shards, st.Directory.Dialect())
	}
	return st, dsn, serverArgs, closeAll, nil
}

// load makes the run's groups and keys, bulk-loads the data set, puts
// the other schools in a district, and makes the firehose's schools.
func load(ctx context.Context, cfg Config, st *stores.Stores, now time.Time, res *Result) (keys benchKeys, firehoseKeys []string, err error) {
	if keys, err = setUp(ctx, st, cfg.Scale); err != nil {
		return keys, nil, err
	}
	if err := bulkLoad(ctx, st.Usage, cfg, now, res); err != nil {
		return keys, nil, err
	}
	if cfg.Scale.OtherGroups > 0 {
		if keys.district, err = makeDistrict(ctx, st, cfg.Scale); err != nil {
			return keys, nil, err
		}
	}
	fmt.Fprintf(cfg.Out, "bulk load: %d events in %.1f s, %.0f events/s\n", res.Events, res.BulkLoadSeconds, res.BulkEventsPerSec)
	if cfg.Firehose.Duration > 0 {
		if firehoseKeys, err = setUpFirehose(ctx, st, cfg.Firehose.Groups); err != nil {
			return keys, nil, err
		}
	}
	return keys, firehoseKeys, nil
}

// baselines are the baselines of the groups asked, each opened once: on
// ClickHouse, each on its group's shard.
type baselines struct {
	ctx  context.Context
	dsn  string
	st   *stores.Stores
	open map[string]*baseline
}

func (bl *baselines) of(group string) (*baseline, error) {
	if b := bl.open[group]; b != nil {
		return b, nil
	}
	var b *baseline
	var err error
	if bl.st.Shards != nil {
		b, err = openClickHouseBaseline(bl.ctx, bl.st, group)
	} else {
		b, err = openBaseline(bl.dsn, bl.st.Directory.Dialect())
	}
	if err == nil {
		bl.open[group] = b
	}
	return b, err
}

func (bl *baselines) close() {
	for _, b := range bl.open {
		b.db.Close()
	}
}

// scenariosOf is the report scenarios of a run, and the whole range they
// ask.
func scenariosOf(cfg Config, now time.Time) ([]scenario, analytics.DayRange) {
	first := cfg.Scale.firstDay(now)
	r := analytics.DayRange{First: first, Last: first + analytics.Day(cfg.Scale.Days) - 1}
	quarter := analytics.DayRange{First: max(r.First, r.Last-89), Last: r.Last}
	scenarios := []scenario{
		{name: "live lecture, group, whole period", endpoint: "live-lecture", r: r, baseline: (*baseline).liveLectureGroup},
		{name: "chat, group, whole period", endpoint: "chat", r: r, baseline: (*baseline).chatGroup},
		{name: "chat, students, whole period", endpoint: "chat", r: r, params: "students=true", baseline: (*baseline).chatStudents},
		{name: "chat, group, interval=week", endpoint: "chat", r: r, params: "interval=week", baseline: (*baseline).chatWeekly},
		{name: "the same, for a class of every student", endpoint: "chat", r: r, params: "interval=week&classId=" + benchClass,
			sameAs: "chat, group, interval=week"},
		{name: "the same, for the group with minCellSize 10", endpoint: "chat", r: r, params: "interval=week", minCellSize: 10,
			sameAs: "chat, group, interval=week"},
		{name: "chat, students, interval=month", endpoint: "chat", r: r, params: "students=true&interval=month", baseline: (*baseline).chatStudentsMonthly},
		{name: "the same, compressed as a browser asks", endpoint: "chat", r: r, params: "students=true&interval=month",
			acceptEncoding: browserEncodings, sameAs: "chat, students, interval=month"},
		{name: "chat, students, interval=day, a quarter (small group)", endpoint: "chat", group: "bench-other-1", r: quarter,
			params: "students=true&interval=day", baseline: (*baseline).chatStudentsDaily},
	}
	if cfg.Scale.Students > platform.MaxClassMembers { // too many for a class
		scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool { return strings.Contains(sc.params, benchClass) })
	}
	return scenarios, r
}

// measureReports times each scenario and checks its answer against its
// baseline's (or the scenario it must answer as), adding it to res, then
// the list of who stopped.
func measureReports(ctx context.Context, cfg Config, srv *Server, st *stores.Stores, keys benchKeys, scenarios []scenario,
	bl *baselines, res *Result) error {
	answers := map[string]answer{}
	for _, sc := range scenarios {
		key := keys.of(sc)
		if sc.minCellSize > 0 {
			if err := st.Directory.SetMinCellSize(ctx, "bench-main", sc.minCellSize); err != nil {
				return err
			}
		}
		rr, got, err := measure(srv.Base, key, sc, cfg)
		if sc.minCellSize > 0 {
			err = cmp.Or(err, st.Directory.SetMinCellSize(ctx, "bench-main", 0))
		}
		if err != nil {
			return err
		}
		answers[sc.name] = got
		switch {
		case sc.minCellSize > 0:
			var hidden int
			rr.SameAnswer, hidden = sameShown(got, answers[sc.sameAs])
			fmt.Fprintf(cfg.Out, "%s: %d figures hidden\n", sc.name, hidden)
		case sc.baseline == nil:
			rr.SameAnswer = sameAnswer(got, answers[sc.sameAs]) && sameAnswer(answers[sc.sameAs], got)
		default:
			b, err := bl.of(cmp.Or(sc.group, "bench-main"))
			if err != nil {
				return err
			}
			want, durations, err := b.time(sc, cfg.Baseline)
			if err != nil {
				return fmt.Errorf("baseline %s: %w", sc.name, err)
			}
			rr.BaselineP50 = percentile(durations, 50)
			rr.BaselineRatio = rr.BaselineP50 / rr.P50
			rr.SameAnswer = sameAnswer(got, want)
		}
		rr.FloorRatio = rr.P50 / res.Floor.P50
		if !rr.SameAnswer {
			return fmt.Errorf("%s: the service and the baseline disagree", sc.name)
		}
		res.Reports = append(res.Reports, rr)
		fmt.Fprintf(cfg.Out, "measured %s\n", sc.name)
	}
	var err error
	if res.LastUse, err = measureLastUse(ctx, cfg, st, srv, keys.main, bl); err == nil {
		fmt.Fprintf(cfg.Out, "measured the list of who stopped\n")
	}
	return err
}

// measureWrites measures ingestion over HTTP, in batches of 1,000 and one
// event a request, and the firehose.
func measureWrites(cfg Config, srv *Server, keys benchKeys, firehoseKeys []string, now time.Time, res *Result) (err error) {
	if res.Ingest, err = ingest(srv.Base, keys.token, cfg, now, "i", 1000, cfg.Ingest); err != nil {
		return err
	}
	if res.IngestOne, err = ingest(srv.Base, keys.token, cfg, now, "j", 1, cfg.IngestOne); err != nil {
		return err
	}
	if cfg.Firehose.Duration > 0 {
		fresh, enrolled, err := firehose(srv.Base, keys.token, firehoseKeys, cfg.Firehose, analytics.DayOf(now, time.UTC)-1)
		if err != nil {
			return err
		}
		res.Firehose, res.FirehoseEnrolled = &fresh, &enrolled
	}
	return nil
}

func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name\t: "); ok {
				cpu = name
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%d cores (%s)%s, %s", runtime.NumCPU(), cpu, mem, runtime.Version())
}

// measureBareFloor measures the floor on a server without rate limits and
// metrics, to tell what they cost.
func measureBareFloor(ctx context.Context, cfg Config, serverArgs []string, key string, floor scenario) (ReportResult, error) {
	srv, err := StartServer(cfg.Binary, append(slices.Clone(serverArgs),
		"--key-rate-limit", "off", "--token-rate-limit", "off", "--failed-auth-limit", "off"))
	if err != nil {
		return ReportResult{}, err
	}
	defer srv.Stop()
	rr, _, err := measure(srv.Base, key, scenario{name: "floor without limits and metrics", endpoint: floor.endpoint, r: floor.r}, cfg)
	return rr, err
}

// moveMain moves the main group to another shard, and checks that a report
// answers the same after.
func moveMain(ctx context.Context, st *stores.Stores, base, key string, sc scenario) (*MoveResult, error) {
	before, _, err := request(base, key, sc)
	if err != nil {
		return nil, err
	}
	p, _, err := st.Directory.Placement(ctx, "bench-main")
	if err != nil {
		return nil, err
	}
	shards := st.Shards.Shards()
	to := shards[0]
	if to == p.Shard {
		to = shards[len(shards)-1]
	}
	moved, err := st.Shards.MoveGroup(ctx, "bench-main", to)
	if err != nil {
		return nil, err
	}
	after, _, err := request(base, key, sc)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(before, after) {
		return nil, fmt.Errorf("%s: the report after moving the group differs from the one before", sc.name)
	}
	return &MoveResult{Events: moved.Events, Seconds: moved.Took.Seconds()}, nil
}

func printTable(w io.Writer, res *Result) {
	fmt.Fprintf(w, "\nmachine: %s\nstore: %s; events: %d (main group %d)\n\n", res.Machine, res.Store, res.Events, res.MainGroupEvents)
	fmt.Fprintf(w, "%-52s %8s %9s %9s %9s %9s %12s %10s %10s %10s\n", "report", "reports", "p50 ms", "p95 ms", "p99 ms", "req/s", "baseline ms", "base/svc", "svc/floor", "MB sent")
	row := func(r ReportResult) {
		base, ratio, floor := "-", "-", "-"
		if r.BaselineP50 > 0 {
			base, ratio = fmt.Sprintf("%.1f", r.BaselineP50), fmt.Sprintf("%.0fx", r.BaselineRatio)
		}
		if r.FloorRatio > 0 {
			floor = fmt.Sprintf("%.1fx", r.FloorRatio)
		}
		fmt.Fprintf(w, "%-52s %8d %9.2f %9.2f %9.2f %9.0f %12s %10s %10s %10.1f %s\n", r.Name, r.Reports, r.P50, r.P95, r.P99, r.RequestsPerS,
			base, ratio, floor, float64(r.Bytes)/1e6, r.Encoding)
	}
	row(res.Floor)
	row(res.FloorBare)
	for _, r := range res.Reports {
		row(r)
	}
	if len(res.AccessLog) > 0 {
		fmt.Fprintf(w, "\nthe access log: student reports on the server, which records each answer, and on one without the log, in turn (%d runs each, medians):\n", res.AccessLog[0].Runs)
		for _, c := range res.AccessLog {
			fmt.Fprintf(w, "  %-54s p50 %7.2f ms, without %7.2f (%+.0f%%)   req/s %6.0f, without %6.0f (%+.0f%%)\n", c.Name, c.P50, c.P50Off,
				100*(c.P50/c.P50Off-1), c.PerSec, c.PerSecOff, 100*(c.PerSec/c.PerSecOff-1))
		}
	}
	if len(res.SignedIn) > 0 {
		fmt.Fprintf(w, "\na signed-in session: student reports asked with a school administrator's session and with the school's key, in turn (%d runs each, medians):\n", res.SignedIn[0].Runs)
		for _, c := range res.SignedIn {
			fmt.Fprintf(w, "  %-54s p50 %7.2f ms, key %7.2f (%+.0f%%)   req/s %6.0f, key %6.0f (%+.0f%%)\n", c.Name, c.P50, c.P50Key,
				100*(c.P50/c.P50Key-1), c.PerSec, c.PerSecKey, 100*(c.PerSec/c.PerSecKey-1))
		}
	}
	if sc := res.Schools; sc.Schools > 0 {
		fmt.Fprintf(w, "\nevery other school (%d), each asked for its chat group report and student report over the whole period by %d clients:\n", sc.Schools, sc.Clients)
		for _, l := range []struct {
			name string
			l    Latencies
		}{{"group report, first", sc.GroupFirst}, {"student report, first", sc.StudentFirst}, {"group report, again", sc.GroupAgain}, {"student report, again", sc.StudentAgain}} {
			fmt.Fprintf(w, "  %-24s p50 %7.2f ms  p99 %7.2f ms\n", l.name, l.l.P50, l.l.P99)
		}
		fmt.Fprintf(w, "  server RSS after: %.0f MB\n", float64(sc.RSSBytes)/1e6)
	}
	res.Refusals.print(w)
	res.LastUse.print(w)
	if d := res.District; d != nil {
		d.print(w)
	}
	fmt.Fprintln(w)
	for _, in := range []IngestResult{res.Ingest, res.IngestOne} {
		fmt.Fprintf(w, "ingestion over HTTP: %.0f events/s (%d events, batches of %d, %d connections)\n",
			in.EventsPerSec, in.Events, in.BatchSize, in.Connections)
	}
	if fh := res.Firehose; fh != nil {
		fmt.Fprintf(w, "firehose, one event per request to %d groups from %d connections, each from a new student: %s\n",
			fh.Groups, fh.Connections, fh.summary())
	}
	if fh := res.FirehoseEnrolled; fh != nil {
		fmt.Fprintf(w, "  the same, each from a student who sent before: %s\n", fh.summary())
	}
	fmt.Fprintf(w, "bulk load: %.0f events/s (%d events in %.1f s)\n", res.BulkEventsPerSec, res.Events, res.BulkLoadSeconds)
	fmt.Fprintf(w, "server peak RSS: %.0f MB\n", float64(res.PeakRSSBytes)/1e6)
	fmt.Fprintf(w, "store on disk: %.0f MB, %.0f bytes per event\n", float64(res.DiskBytes)/1e6, res.DiskBytesPerEvt)
	if m := res.Move; m != nil {
		fmt.Fprintf(w, "group move: %d events in %.1f s (the report after it the same)\n", m.Events, m.Seconds)
	}
	if res.Warehouse != nil {
		printWarehouse(w, res.Warehouse)
	}
}
