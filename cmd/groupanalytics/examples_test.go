package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// demoUntil is the last day of the demo's events in the README's session.
const demoUntil = "2026-11-20"

// installCommand is how the README puts the binary on PATH.
const installCommand = "go install ./cmd/groupanalytics"

// docs are the pages whose examples are run: the README and every page
// of docs/.
func docs(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{"README.md": readDoc(t, "README.md")}
	names, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	for _, name := range names {
		rel := "docs/" + filepath.Base(name)
		pages[rel] = readDoc(t, rel)
	}
	return pages
}

// TestFrontDoorExamples runs every shell session of the README and of
// docs/ as a user would, with the binary the README's install command
// puts on PATH: those on 127.0.0.1:8080 against the demo the README
// shows (--until 2026-11-20), each command with curl; those on
// localhost:8080 in one shell of their own, in a new directory, from the
// first command to the last (migrate, token create, serve &, curl …).
// Each answer is compared with the one printed, and the demo's output
// with the README's; docs/api.md's answer and CSV with the demo's. So
// the documentation cannot drift from the service.
func TestFrontDoorExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes and curl")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is required in CI")
		}
		t.Skip("SKIPPED: no curl")
	}
	pages := docs(t)
	readme, api := pages["README.md"], pages["docs/api.md"]
	if !strings.Contains(readme, "\n    "+installCommand+"\n") {
		t.Fatalf("the README does not say %q", installCommand)
	}
	bin := installBinary(t)

	demo, demoOut, keys := startDemo(t, bin)
	token := regexp.MustCompile(`gat_\w+`).FindString(demoOut)
	sessionsRun := 0
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		for _, block := range sessions(pages[name]) {
			sessionsRun++
			if !strings.Contains(block[0].command, "127.0.0.1:8080") {
				runFreshSession(t, name, filepath.Dir(bin), block)
				continue
			}
			for _, s := range block {
				cmd := strings.ReplaceAll(s.command, "http://127.0.0.1:8080", demo)
				cmd = regexp.MustCompile(`gak_[A-Z0-9]{26}`).ReplaceAllString(cmd, keys["Northside High School"])
				cmd = regexp.MustCompile(`gat_[A-Z0-9]{26}`).ReplaceAllString(cmd, token)
				cmd = regexp.MustCompile(`gad_[A-Z0-9]{26}`).ReplaceAllString(cmd, keys["Lakeland District"])
				cmd = strings.ReplaceAll(cmd, "<key of Riverside College>", keys["Riverside College"])
				s.check(t, name, run(t, cmd, nil))
			}
		}
	}
	if sessionsRun < 3 {
		t.Errorf("only %d sessions in the documentation", sessionsRun)
	}
	// The demo's own output, as the README shows it.
	if want := fencedAfter(t, readme, "Output of `groupanalytics demo --until "+demoUntil+"`"); !matches(want, demoOut) {
		t.Errorf("the demo printed:\n%s\nthe README shows:\n%s", demoOut, want)
	}

	// docs/api.md: the answer and the CSV it shows.
	var shown, got any
	json.Unmarshal([]byte(fencedAfter(t, api, "### The answer")), &shown)
	answer := run(t, "curl -s -X POST '"+demo+"/api/groups/live-lecture?startDate=2026-11-01&endDate=2026-11-14' -H 'x-api-key: "+keys["Northside High School"]+"'", nil)
	if err := json.Unmarshal([]byte(answer), &got); err != nil || !reflect.DeepEqual(shown, got) {
		t.Errorf("docs/api.md's answer is not the demo's:\n%s", answer)
	}
	csv := run(t, "curl -s -X POST '"+demo+"/api/groups/chat?format=csv&students=true&startDate=2026-11-01&endDate=2026-11-14' -H 'x-api-key: "+keys["Northside High School"]+"'", nil)
	for line := range strings.Lines(fencedAfter(t, api, "### CSV")) {
		if !strings.Contains(csv, strings.TrimSpace(line)+"\r\n") {
			t.Errorf("docs/api.md's CSV line %q is not in the demo's answer", strings.TrimSpace(line))
		}
	}
}

// installBinary runs the README's install command from the clone, with
// GOBIN a directory of the test's, and returns the binary it made.
func installBinary(t *testing.T) string {
	t.Helper()
	gobin := t.TempDir()
	cmd := exec.Command("bash", "-c", installCommand)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", installCommand, err, out)
	}
	return filepath.Join(gobin, "groupanalytics")
}

// runFreshSession runs a session written for localhost:8080 in one bash
// of its own, in a new directory, with the installed binary first on
// PATH and the service's address a free one: as written, but for the
// address and the secrets (a key or token shown is the last one the
// session printed). A command sent to the background (serve &) is waited
// for until the service is ready; the shell and what it started are
// killed at the end.
func runFreshSession(t *testing.T, page, bindir string, block []step) {
	t.Helper()
	addr := freePort(t)
	sh := startShell(t, t.TempDir(), "PATH="+bindir+":"+os.Getenv("PATH"), "GROUPANALYTICS_ADDR="+addr)
	var key, token string
	for _, s := range block {
		cmd := strings.ReplaceAll(s.command, "localhost:8080", addr)
		cmd = regexp.MustCompile(`gak_[A-Z0-9]{26}`).ReplaceAllString(cmd, key)
		cmd = regexp.MustCompile(`gat_[A-Z0-9]{26}`).ReplaceAllString(cmd, token)
		out := sh.run(t, cmd)
		key = cmp.Or(regexp.MustCompile(`gak_[A-Z0-9]{26}`).FindString(out), key)
		token = cmp.Or(regexp.MustCompile(`gat_[A-Z0-9]{26}`).FindString(out), token)
		s.check(t, page, out)
		if strings.HasSuffix(strings.TrimSpace(cmd), "&") {
			sh.run(t, "for i in $(seq 1 100); do curl -sf "+addr+"/readyz >/dev/null && break; sleep 0.1; done")
		}
	}
}

// shell is a bash that a test sends commands to, one at a time.
type shell struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr strings.Builder
}

// shellDone ends what a command printed, with its exit status after it.
const shellDone = "@@session-command-done@@"

func startShell(t *testing.T, dir string, env ...string) *shell {
	t.Helper()
	sh := &shell{cmd: exec.Command("bash", "--noprofile", "--norc"), lines: make(chan string, 100)}
	sh.cmd.Dir = dir
	sh.cmd.Env = append(os.Environ(), env...)
	sh.cmd.Stderr = &sh.stderr
	sh.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // to kill what it started too
	var err error
	if sh.stdin, err = sh.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := sh.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(sh.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			sh.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
		sh.cmd.Wait()
	})
	return sh
}

// run sends the command and returns what it printed, failing the test if
// it fails or does not finish within a minute.
func (sh *shell) run(t *testing.T, command string) string {
	t.Helper()
	fmt.Fprintf(sh.stdin, "%s\nprintf '\\n%s %%d\\n' $?\n", command, shellDone)
	var out strings.Builder
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-sh.lines:
			if !ok {
				t.Fatalf("$ %s: the shell stopped:\n%s%s", command, out.String(), sh.stderr.String())
			}
			if status, found := strings.CutPrefix(line, shellDone+" "); found {
				if status != "0" {
					t.Fatalf("$ %s: exit %s\n%s%s", command, status, out.String(), sh.stderr.String())
				}
				return out.String()
			}
			out.WriteString(line + "\n")
		case <-timeout:
			t.Fatalf("$ %s: still running after a minute:\n%s", command, out.String())
		}
	}
}

// TestDocLinks: every relative link of the README and docs/ names a file
// of the clone, and a link to a heading (#…) a heading of that page.
func TestDocLinks(t *testing.T) {
	pages := docs(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for name, text := range pages {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(filepath.Dir(name), file)
			if file == "" {
				path = name
			}
			b, err := os.ReadFile(filepath.Join("..", "..", path))
			if err != nil {
				t.Errorf("%s links to %s: %v", name, target, err)
				continue
			}
			if anchor != "" && !slices.Contains(headingAnchors(string(b)), anchor) {
				t.Errorf("%s links to %s: %s has no such heading", name, target, path)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("only %d links checked", checked)
	}
}

// headingAnchors are the anchors a Markdown page's headings get, as
// GitHub makes them: lower case, spaces as hyphens, punctuation dropped.
func headingAnchors(doc string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(doc, -1) {
		a := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, m[1])
		out = append(out, a)
	}
	return out
}

// TestDocCommandsExist: every command line the README and docs/ show
// ("groupanalytics …", in their blocks and their text) names a command,
// and every flag it gives is one of that command's; every flag of the
// configuration table is serve's.
func TestDocCommandsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	pages := docs(t)
	bin := buildBinary(t)
	helps := map[string]string{}
	help := func(command string) string {
		if _, ok := helps[command]; !ok {
			out, _ := exec.Command(bin, append(strings.Fields(command), "--help")...).CombinedOutput()
			helps[command] = string(out)
		}
		return helps[command]
	}
	commandLine := regexp.MustCompile(`(?m)groupanalytics ([a-z][a-z -]*?)( --[^\n` + "`" + `#&]*|)(?:\s*[#&].*)?$`)
	flag := regexp.MustCompile(`--([a-z][a-z-]*)`)
	checked := 0
	for name, text := range pages {
		for _, m := range commandLine.FindAllStringSubmatch(text, -1) {
			command := strings.TrimSpace(m[1])
			if command == "" || strings.HasPrefix(command, "demo:") {
				continue
			}
			usage := help(command)
			if !strings.HasPrefix(usage, "usage: groupanalytics "+command) {
				t.Errorf("%s shows groupanalytics %s, which is not a command:\n%s", name, command, usage)
				continue
			}
			for _, f := range flag.FindAllStringSubmatch(m[2], -1) {
				if !strings.Contains(usage, "  -"+f[1]+" ") && !strings.Contains(usage, "  -"+f[1]+"\n") {
					t.Errorf("%s gives groupanalytics %s --%s, which it does not take", name, command, f[1])
				}
			}
			checked++
		}
	}
	serve := help("serve")
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| `GROUPANALYTICS_").FindAllStringSubmatch(pages["docs/operating.md"], -1) {
		if !strings.Contains(serve, "  -"+m[1]+" ") && !strings.Contains(serve, "  -"+m[1]+"\n") {
			t.Errorf("the configuration table names --%s, which serve does not take", m[1])
		}
		checked++
	}
	if checked < 40 {
		t.Errorf("only %d command lines and flags checked", checked)
	}
	t.Logf("%d command lines and configuration flags checked", checked)
}

// step is one command of a session and what the README shows it print.
type step struct {
	command, want string
}

// check compares what the command printed with what the page shows.
func (s step) check(t *testing.T, page, got string) {
	t.Helper()
	if !matches(s.want, got) {
		t.Errorf("$ %s\ngot:\n%s\n%s shows:\n%s", s.command, shorten(got), page, s.want)
	}
}

// shorten cuts a long answer for a failure's message.
func shorten(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// volatile are what differs from run to run in what the README shows
// (keys, key ids, creation times, the demo's address and file), and the
// patterns that stand for them.
var volatile = []struct {
	shown *regexp.Regexp
	any   string
}{
	{regexp.MustCompile(`gak_[A-Z0-9]+`), `gak_[A-Z0-9]+`},
	{regexp.MustCompile(`gat_[A-Z0-9]+`), `gat_[A-Z0-9]+`},
	{regexp.MustCompile(`gad_[A-Z0-9]+`), `gad_[A-Z0-9]+`},
	{regexp.MustCompile(`dkey_[a-z0-9]{10}`), `dkey_[a-z0-9]{10}`},
	{regexp.MustCompile(`tok_[a-z0-9]{10}`), `tok_[a-z0-9]{10}`},
	{regexp.MustCompile(`key_[a-z0-9]{10}`), `key_[a-z0-9]{10}`},
	{regexp.MustCompile(`"(createdAt|lastUsedAt)":"[^"]*"`), `"(createdAt|lastUsedAt)":"[^"]*"`},
	{regexp.MustCompile(`at \S+groupanalytics-demo\.db`), `at \S+`},
	{regexp.MustCompile(`http://127\.0\.0\.1:8080`), `http://127\.0\.0\.1:\d+`},
}

// matches reports whether got is what the README shows: the same text,
// but where it shows "..." (anything) or a volatile value.
func matches(shown, got string) bool {
	text := strings.TrimSpace(shown)
	var holes []string
	for _, v := range volatile {
		text = v.shown.ReplaceAllStringFunc(text, func(string) string {
			holes = append(holes, v.any)
			return fmt.Sprintf("\x00%d\x00", len(holes)-1)
		})
	}
	parts := strings.Split(text, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	pattern := strings.Join(parts, ".*?")
	for i, hole := range holes {
		pattern = strings.Replace(pattern, fmt.Sprintf("\x00%d\x00", i), hole, 1)
	}
	return regexp.MustCompile(`(?s)^` + pattern + `$`).MatchString(strings.TrimSpace(got))
}

// sessions reads the shell sessions of a Markdown text: fenced blocks
// whose lines start with "$ ", each cut into commands (a command goes on
// while a line ends with a backslash or a quote is open) and the lines
// they print.
func sessions(doc string) [][]step {
	var blocks [][]step
	for _, block := range regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		if !strings.HasPrefix(block[1], "$ ") {
			continue
		}
		var steps []step
		var cmd []string
		for line := range strings.Lines(block[1]) {
			line = strings.TrimRight(line, "\n")
			switch {
			case cmd != nil:
				cmd = append(cmd, line)
			case strings.HasPrefix(line, "$ "):
				cmd = []string{strings.TrimPrefix(line, "$ ")}
			default:
				steps[len(steps)-1].want += line + "\n"
				continue
			}
			text := strings.Join(cmd, "\n")
			if !strings.HasSuffix(line, `\`) && strings.Count(text, "'")%2 == 0 {
				steps, cmd = append(steps, step{command: text}), nil
			}
		}
		blocks = append(blocks, steps)
	}
	return blocks
}

// fencedAfter is the first fenced block after the line holding heading.
func fencedAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("no %q in the document", heading)
	}
	m := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindStringSubmatch(doc[i:])
	if m == nil {
		t.Fatalf("no block after %q", heading)
	}
	return m[1]
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run runs a command line with bash and returns what it printed.
func run(t *testing.T, command string, env []string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return string(out)
}

// startDemo starts the demo with --until demoUntil on a free port, and
// returns its base URL, what it printed, and each school's key by name.
func startDemo(t *testing.T, bin string) (base, out string, keys map[string]string) {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, "demo", "--addr", addr, "--db", filepath.Join(t.TempDir(), "demo.db"), "--until", demoUntil, "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	keys = map[string]string{}
	var printed strings.Builder
	school := ""
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the demo stopped:\n%s", printed.String())
			}
			printed.WriteString(line + "\n")
			if name, _, found := strings.Cut(line, " ("); found && !strings.HasPrefix(line, " ") {
				school = name
			}
			if k := regexp.MustCompile(`ga[kd]_\w+`).FindString(line); k != "" && keys[school] == "" {
				keys[school] = k
			}
			if strings.HasPrefix(line, "Serving on ") {
				return "http://" + addr, printed.String(), keys
			}
		case <-deadline:
			t.Fatalf("the demo did not start in two minutes:\n%s", printed.String())
		}
	}
}

// freePort is a free loopback address (host:port) for a process to listen on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestBenchmarksPage: BENCHMARKS.md is a page of today's figures (at most
// 400 lines), and every figure of the README's table of speeds is in it.
func TestBenchmarksPage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(page), "\n"); lines > 400 {
		t.Errorf("BENCHMARKS.md has %d lines, at most 400: today's figures, not their history", lines)
	}
	_, table, ok := strings.Cut(string(readme), "| p50 | SQLite | PostgreSQL | ClickHouse (2 shards) |")
	if !ok {
		t.Fatal("README.md has no table of speeds")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	figures := regexp.MustCompile(`\d[\d,.]*`).FindAllString(table, -1)
	if len(figures) < 40 {
		t.Fatalf("the README's table has %d figures: is it the table?", len(figures))
	}
	for _, figure := range figures {
		if !strings.Contains(string(page), figure) {
			t.Errorf("the README's figure %s is not in BENCHMARKS.md", figure)
		}
	}
}
