// Package cli implements the groupanalytics command: serve, demo, and the
// admin commands that work on the store directly.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/buildinfo"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

// env is what every command runs with.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name    string
	args    string // the usage line after the name
	summary string
	run     func(e *env, args []string) error
}

// commands lists the subcommands in the order help shows them.
var commands []command

func init() {
	commands = []command{
		{"serve", "[--addr ADDR] [--db DB] [--log-level LEVEL] [--smtp-url URL --public-url URL]", "run the HTTP server (and, with --smtp-url, send the weekly digests)", runServe},
		{"demo", "[--addr ADDR] [--db FILE|postgres://…] [--usage clickhouse://…]", "serve demo data from a store of the demo's own (a new SQLite file, or an empty PostgreSQL database; never GROUPANALYTICS_DB), with curl commands to try", runDemo},
		{"migrate", "[--db DB]", "apply pending schema migrations and exit", runMigrate},
		{"group create", "--id ID [--name NAME] [--tz ZONE]", "create a group (time zone: IANA name, default UTC)", groupCreate},
		{"group list", "", "list groups", groupList},
		{"group rename", "--group ID --name NAME", "change a group's display name", groupRename},
		{"group set-timezone", "--group ID --tz ZONE", "change a group's time zone, rebuilding its rollups in it", groupSetTimeZone},
		{"group set-min-cell-size", "--group ID --size N", "hide report figures that fewer than N students make up (0: off; see docs/api.md, small cells)", groupSetMinCellSize},
		{"group set-inactive-after", "--group ID --days N", "count a student who used the service as stopped after N days without use (default 7; see docs/api.md, students who stopped)", groupSetInactiveAfter},
		{"group set-retention", "--group ID --keep 400d|off", "keep this many days of a group's usage, deleting older days' every hour (see docs/api.md, retention)", groupSetRetention},
		{"group delete", "--group ID --yes", "erase a group for good: its usage on every store, students, keys, plans and digests", groupDelete},
		{"group move", "--group ID --shard HOST:PORT", "move a group's usage to another ClickHouse shard (needs --usage)", groupMove},
		{"shard list", "", "list the ClickHouse shards with their groups and events (needs --usage)", shardList},
		{"district create", "--id ID [--name NAME] [--tz ZONE]", "create a district, which holds schools (time zone of its reports' bounds, default UTC)", districtCreate},
		{"district list", "", "list districts and their schools", districtList},
		{"district rename", "--district ID --name NAME", "change a district's display name", districtRename},
		{"district delete", "--district ID", "delete a district and its keys (its schools stay)", districtDelete},
		{"district attach", "--district ID --group ID", "put a school in a district (a school is in one at most)", districtAttach},
		{"district detach", "--district ID --group ID", "take a school out of its district", districtDetach},
		{"district key create", "--district ID [--label TEXT]", "create a district's report key; it is shown once", districtKeyCreate},
		{"district key list", "--district ID", "list a district's keys", districtKeyList},
		{"district key revoke", "--district ID --key KEY_ID", "revoke a district's key", districtKeyRevoke},
		{"plan set", "--group ID [--start WHEN] [--end WHEN] [--seats N]", "give a group a plan period (dates or RFC 3339 times), covering N students if given", planSet},
		{"plan cancel", "--group ID --plan N", "cancel a plan from now on", planCancel},
		{"plan list", "--group ID", "list a group's plans", planList},
		{"key create", "--group ID [--label TEXT]", "create a report key; it is shown once", keyCreate},
		{"key list", "--group ID", "list a group's keys", keyList},
		{"key revoke", "--group ID --key KEY_ID", "revoke a report key", keyRevoke},
		{"student add", "--group ID --id STUDENT_ID --name NAME", "enrol a student", studentAdd},
		{"student rename", "--group ID --id STUDENT_ID --name NAME", "change a student's display name", studentRename},
		{"student list", "--group ID", "list a group's students", studentList},
		{"student delete", "--group ID --id STUDENT_ID", "erase a student and all their usage", studentDelete},
		{"student export", "--group ID --id STUDENT_ID --to FILE.zip", "write everything held about a student (their events, classes and access log entries) to a new zip file", studentExport},
		{"class create", "--group ID --id CLASS_ID --name NAME [--start DATE] [--end DATE] [STUDENT_ID ...]", "create a class of a group's students", classCreate},
		{"class list", "--group ID", "list a group's classes", classList},
		{"class show", "--group ID --id CLASS_ID", "list a class's students", classShow},
		{"class rename", "--group ID --id CLASS_ID --name NAME", "change a class's display name", classRename},
		{"class members", "--group ID --id CLASS_ID [STUDENT_ID ...]", "make these students the class's members (none: empty it)", classMembers},
		{"class delete", "--group ID --id CLASS_ID", "delete a class (its students stay in the group)", classDelete},
		{"roster import", "--group ID [--org ORG_ID] | --district ID [--dry-run] FILE.zip", "take a group's students and classes (or a district's schools, each's) from a OneRoster 1.2 or 1.1 CSV bundle, all or nothing", rosterImport},
		{"staff add", "--group ID | --district ID --email EMAIL --role ROLE [--name NAME] [--class CLASS_ID ...]", "add a teacher (with their classes) or an administrator to a school's staff, or an administrator to a district's", staffAdd},
		{"staff list", "--group ID | --district ID", "list a school's or a district's staff", staffList},
		{"staff remove", "--staff ID", "take a member off their staff", staffRemove},
		{"provider add", "--group ID | --district ID --id ID --issuer URL --client-id ID --client-secret-file FILE --domain DOMAIN ... [--name NAME]", "add an OpenID Connect provider that a school's or a district's staff sign in with", providerAdd},
		{"provider list", "--group ID | --district ID", "list a school's or a district's sign-in providers (never their secrets)", providerList},
		{"provider remove", "--provider ID", "remove a sign-in provider", providerRemove},
		{"warehouse add", "--group ID | --district ID --id ID (--endpoint URL --bucket NAME --access-key-id ID --secret-access-key-file FILE [--prefix P] | --folder PATH) [--format parquet|csv]",
			"deliver a school's or a district's daily usage files to its S3-compatible bucket (tried first with a test write) or a folder", warehouseAdd},
		{"warehouse list", "--group ID | --district ID", "list a school's or a district's warehouses (never their secrets)", warehouseList},
		{"warehouse show", "--warehouse ID", "a warehouse and how its deliveries stand", warehouseShow},
		{"warehouse backfill", "--warehouse ID --start DATE --end DATE", "queue the days of a range for delivery", warehouseBackfill},
		{"warehouse remove", "--warehouse ID", "stop a warehouse's deliveries (its files stay)", warehouseRemove},
		{"lti platform add", "--group ID | --district ID --id ID --issuer URL --client-id ID --deployment ID ... --auth-url URL --token-url URL --jwks-url URL [--name NAME] [--match-email]",
			"register a school's or a district's LMS (LTI 1.3) by hand: its launches open the dashboard in its courses", ltiPlatformAdd},
		{"lti platform register-url", "--group ID | --district ID --public-url URL",
			"make the address a school's or a district's LMS registers itself at (LTI Dynamic Registration), usable once within a week", ltiPlatformRegisterURL},
		{"lti platform list", "--group ID | --district ID", "list a school's or a district's LMSs", ltiPlatformList},
		{"lti platform remove", "--platform ID", "remove an LMS: its launches' sessions end", ltiPlatformRemove},
		{"recipient add", "--group ID | --district ID --address EMAIL [--class CLASS_ID]", "send a group's weekly digest to an address (a class's, to its teacher, with --class), or a district's", recipientAdd},
		{"recipient list", "--group ID | --district ID", "list a group's or a district's digest recipients", recipientList},
		{"recipient remove", "--group ID | --district ID --address EMAIL", "stop a group's or a district's weekly digest to an address", recipientRemove},
		{"access-log", "--group ID [--student STUDENT_ID] [--since DATE] [--limit N]", "list a group's access log: who read which students' reports, newest first", accessLogList},
		{"receipt list", "[--group ID]", "list the receipts of deletions (students erased, groups deleted, retention runs), newest first", receiptList},
		{"retention run", "", "delete now the usage older than each group keeps (serve does it every hour)", retentionRun},
		{"digest send", "--group ID | --district ID --to EMAIL [--week 2026-W46] --smtp-url URL --public-url URL", "send a group's or a district's weekly digest now, to try it (not recorded)", digestSend},
		{"token create", "[--label TEXT]", "create a platform API token; it is shown once", tokenCreate},
		{"token list", "", "list platform tokens", tokenList},
		{"token revoke", "--token TOKEN_ID", "revoke a platform token", tokenRevoke},
		{"import", "[FILE|-]", "import NDJSON events, all or nothing (default: stdin)", runImport},
		{"rebuild", "[--group ID]", "recompute rollups from raw events", runRebuild},
		{"backup", "--to FILE [--db FILE] | --to DIR --db URL --usage URL", "copy a SQLite store, or a usage store on ClickHouse and its directory, consistent, while the service runs on it", runBackup},
		{"restore", "--from DIR --db URL --usage URL", "restore a backup of a usage store on ClickHouse and its directory onto an empty database and fresh servers", runRestore},
		{"version", "", "print the build's version, commit and Go version", runVersion},
		{"bench", "[--quick] [--db DB] [--json FILE] [scale flags]", "measure report and ingestion speed against a baseline", runBench},
	}
}

// errUsage means the command line was wrong; usage has been printed.
var errUsage = errors.New("usage")

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) > 1 && args[0] == "help" { // help COMMAND: as COMMAND --help
		args = append(args[1:], "--help")
	}
	if len(args) == 0 || args[0] == "help" || isHelp(args[0]) {
		usage(stdout, "")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			err := c.run(e, args[len(words):])
			switch {
			case err == nil, errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			}
			fmt.Fprintf(stderr, "groupanalytics %s: %s\n", c.name, describe(err))
			return 1
		}
	}
	// A group of commands ("group", "district key"): its own, rather than all.
	if group := groupNamed(args); group != "" {
		rest := args[len(strings.Fields(group)):]
		switch {
		case len(rest) > 0 && isHelp(rest[0]):
			usage(stdout, group)
			return 0
		case len(rest) == 0:
			usage(stdout, group)
			return 2
		}
		fmt.Fprintf(stderr, "groupanalytics: unknown command %q\n\n", strings.Join(args, " "))
		usage(stderr, group)
		return 2
	}
	fmt.Fprintf(stderr, "groupanalytics: unknown command %q\n\n", strings.Join(args, " "))
	usage(stderr, "")
	return 2
}

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	return slices.Contains([]string{"-h", "--h", "-help", "--help"}, arg)
}

// groupNamed returns the longest group of commands that args start with
// (the first words of commands of more words, such as "group" or
// "district key"), or "".
func groupNamed(args []string) string {
	for n := len(args); n > 0; n-- {
		name := strings.Join(args[:n], " ")
		if slices.ContainsFunc(commands, func(c command) bool { return strings.HasPrefix(c.name, name+" ") }) {
			return name
		}
	}
	return ""
}

// describe returns what a user should read of err: the caller-safe message
// when there is one, and for a store that cannot be reached, its cause.
func describe(err error) string {
	if msg := analytics.ErrorMessage(err); msg != "" && analytics.ErrorCode(err) != analytics.Unavailable {
		return msg
	}
	return err.Error()
}

// usage lists the commands, or with a group named, the group's.
func usage(w io.Writer, group string) {
	var listed []command
	for _, c := range commands {
		if group == "" || strings.HasPrefix(c.name, group+" ") {
			listed = append(listed, c)
		}
	}
	width := 0
	for _, c := range listed {
		width = max(width, len(c.name))
	}
	fmt.Fprintf(w, "usage: %s COMMAND [FLAGS]\n\nCommands:\n", strings.TrimSpace("groupanalytics "+group))
	for _, c := range listed {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	if group != "" {
		fmt.Fprintf(w, "Run 'groupanalytics %s COMMAND --help' for a command's flags.\n", group)
		return
	}
	fmt.Fprintln(w, "Every command takes --db (default groupanalytics.db; a postgres:// URL selects PostgreSQL)")
	fmt.Fprintln(w, "and --usage (a clickhouse:// URL puts the usage store on ClickHouse shards).")
	fmt.Fprintln(w, "Configuration flags (--db, --usage, --addr, --log-level, --store-timeout, --metrics-addr, the")
	fmt.Fprintln(w, "rate limits, the digest's --smtp-url, --public-url, --mail-from and --digest-interval, and sign-in's")
	fmt.Fprintln(w, "--session-lifetime and --session-idle) can")
	fmt.Fprintln(w, "also be set in the environment as GROUPANALYTICS_<FLAG>, e.g. GROUPANALYTICS_DB or")
	fmt.Fprintln(w, "GROUPANALYTICS_SMTP_URL (which keeps the SMTP password off the command line); the flags that name what a")
	fmt.Fprintln(w, "command works on (--id, --group, --key, ...) cannot.")
	fmt.Fprintln(w, "Run 'groupanalytics COMMAND --help' for a command's flags.")
}

// storeFlags name the stores: the directory (and by default the usage
// store), and a usage store elsewhere.
type storeFlags struct {
	db, usage string
	demo      bool // the stores are the demo's own: stores.Config.Demo
}

// flags returns a flag set for command c with the common --db and --usage
// flags.
func flags(e *env, name string) (*flag.FlagSet, *storeFlags) {
	fs := commandFlags(e, name)
	db := &storeFlags{}
	fs.StringVar(&db.db, "db", "groupanalytics.db", "SQLite file, or postgres:// URL")
	fs.StringVar(&db.usage, "usage", "", "usage store on ClickHouse: clickhouse://[user[:password]@]host:port[|host:port…][,…]/database: shards separated by commas, a replicated shard's replicas by | (needs a PostgreSQL --db); empty: the --db store")
	return fs, db
}

// commandFlags returns a flag set for command name whose usage is the
// command's usage line, summary and flags.
func commandFlags(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		for _, c := range commands {
			if c.name == name {
				fmt.Fprintf(fs.Output(), "usage: %s\n\n%s.\n", strings.TrimSpace("groupanalytics "+c.name+" "+c.args), c.summary)
			}
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(fs.Output(), "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// configFlags are the flags the environment may set: where and how the
// service runs. Flags that name what a command works on are never taken
// from the environment, so that a stray GROUPANALYTICS_ID cannot choose
// what student delete deletes.
var configFlags = map[string]bool{"db": true, "usage": true, "addr": true, "log-level": true, "store-timeout": true,
	"metrics-addr": true, "key-rate-limit": true, "token-rate-limit": true, "failed-auth-limit": true, "client-ip-header": true,
	"smtp-url": true, "public-url": true, "mail-from": true, "digest-interval": true, "warehouse-dir": true, "warehouse-interval": true, "access-log-retention": true,
	"memory-limit": true, "session-lifetime": true, "session-idle": true}

// notFromEnvironment are the configuration flags a command does not take
// from the environment: the demo's store is its own, and
// GROUPANALYTICS_DB names the service's real one.
var notFromEnvironment = map[string]map[string]bool{"demo": {"db": true, "usage": true}}

// parse parses args, then fills each configuration flag not given from its
// environment variable GROUPANALYTICS_<NAME>. It refuses stray arguments
// unless positional is set.
func parse(e *env, fs *flag.FlagSet, args []string, positional bool, required ...string) error {
	// Asked for, the usage is the answer: on standard output.
	if i := slices.IndexFunc(args, isHelp); i >= 0 && !slices.Contains(args[:i], "--") {
		fs.SetOutput(e.stdout)
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return flag.ErrHelp
	} else if err != nil {
		return errUsage
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "GROUPANALYTICS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && !given[f.Name] && configFlags[f.Name] && !notFromEnvironment[fs.Name()][f.Name] {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%s: %w", name, err)
			}
			given[f.Name] = true
		}
	})
	if envErr != nil {
		return envErr
	}
	var missing []string
	for _, name := range required {
		if !given[name] {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 || (!positional && fs.NArg() > 0) {
		sort.Strings(missing)
		if len(missing) > 0 {
			fmt.Fprintf(e.stderr, "missing %s\n", strings.Join(missing, ", "))
		} else {
			fmt.Fprintf(e.stderr, "unexpected argument %q\n", fs.Arg(0))
		}
		fs.Usage()
		return errUsage
	}
	return nil
}

// open opens and migrates the stores that f names, as cfg says. Unless
// cfg.Create is set it refuses a SQLite file that does not exist.
func (f storeFlags) open(e *env, cfg stores.Config) (*stores.Stores, error) {
	cfg.DB, cfg.Usage, cfg.Demo = f.db, f.usage, f.demo
	return stores.Open(e.ctx, cfg)
}

// quietLog is the logger of admin commands: warnings and errors only.
func quietLog(e *env) *slog.Logger {
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// withPlatform parses the flags, opens the stores, and runs fn on them.
func withPlatform(e *env, fs *flag.FlagSet, db *storeFlags, args []string, positional bool, required []string,
	fn func(p *platform.Platform) error) error {
	// What the command deletes, its receipt says was asked from here.
	e.ctx = analytics.WithRequester(e.ctx, "command line")
	return withStores(e, fs, db, args, positional, required, func(s *stores.Stores) error {
		return fn(platform.New(s.Directory, s.Usage))
	})
}

// withStores parses the flags, opens the stores, and runs fn on them.
func withStores(e *env, fs *flag.FlagSet, db *storeFlags, args []string, positional bool, required []string,
	fn func(s *stores.Stores) error) error {
	if err := parse(e, fs, args, positional, required...); err != nil {
		return err
	}
	s, err := db.open(e, stores.Config{Log: quietLog(e)})
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}

// withShards parses the flags, opens the stores, and runs fn on the
// ClickHouse usage store, which the command needs.
func withShards(e *env, fs *flag.FlagSet, db *storeFlags, args []string, required []string,
	fn func(s *stores.Stores) error) error {
	if err := parse(e, fs, args, false, required...); err != nil {
		return err
	}
	if db.usage == "" {
		return fmt.Errorf("%s works on a usage store on ClickHouse: give --usage clickhouse://…", fs.Name())
	}
	s, err := db.open(e, stores.Config{Log: quietLog(e)})
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}

func runVersion(e *env, args []string) error {
	fs := commandFlags(e, "version")
	if err := parse(e, fs, args, false); err != nil {
		return err
	}
	b := buildinfo.Get()
	fmt.Fprintf(e.stdout, "groupanalytics %s", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(e.stdout, " (commit %s, %s", b.Revision, b.Time)
		if b.Modified {
			fmt.Fprint(e.stdout, ", modified")
		}
		fmt.Fprint(e.stdout, ")")
	} else {
		// Go records the commit only when it builds from a Git checkout
		// with VCS stamping on: say so, rather than print nothing.
		fmt.Fprint(e.stdout, " (commit unknown: not built from a Git checkout with -buildvcs)")
	}
	fmt.Fprintf(e.stdout, " %s\n", b.Go)
	return nil
}

func runMigrate(e *env, args []string) error {
	fs, db := flags(e, "migrate")
	if err := parse(e, fs, args, false); err != nil {
		return err
	}
	s, err := db.open(e, stores.Config{Create: true, MigrateAll: true, Log: slog.New(slog.NewTextHandler(e.stderr, nil))})
	if err != nil {
		return err
	}
	where := "the store"
	if s.Shards != nil {
		where = fmt.Sprintf("the directory and the usage store's %s", analytics.Plural(len(s.Shards.Shards()), "shard"))
	}
	if s.Migrations == 0 {
		fmt.Fprintf(e.stdout, "%s already had the newest schema: nothing to migrate\n", where)
	} else {
		fmt.Fprintf(e.stdout, "migrated %s: %s applied\n", where, analytics.Plural(s.Migrations, "migration"))
	}
	return s.Close()
}
