package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// demoUntil is the last day of the demo's events in the README's session.
const demoUntil = "2026-11-20"

// TestFrontDoorExamples runs every curl session of the README, with curl,
// against the servers they are written for (the demo with --until
// 2026-11-20, and a fresh store with a platform token), and compares each
// answer with the one printed; and checks the answers docs/api.md prints
// against the demo. So the front door cannot drift from the service.
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
	readme, api := readDoc(t, "README.md"), readDoc(t, "docs/api.md")
	bin := buildBinary(t)

	demo, demoOut, keys := startDemo(t, bin)
	var platformBlock []step
	for _, block := range sessions(readme) {
		if strings.Contains(block[0].command, "127.0.0.1:8080") {
			for _, s := range block {
				cmd := strings.ReplaceAll(s.command, "http://127.0.0.1:8080", demo)
				cmd = regexp.MustCompile(`gak_[A-Z0-9]{26}`).ReplaceAllString(cmd, keys["Northside High School"])
				cmd = strings.ReplaceAll(cmd, "<key of Riverside College>", keys["Riverside College"])
				s.check(t, run(t, cmd, nil))
			}
		} else {
			platformBlock = block
		}
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

	// The platform API's session, on a fresh store.
	if platformBlock == nil {
		t.Fatal("no session on localhost:8080 in the README")
	}
	db := filepath.Join(t.TempDir(), "fresh.db")
	runBinary(t, bin, "migrate", "--db", db)
	token := regexp.MustCompile(`gat_\w+`).FindString(runBinary(t, bin, "token", "create", "--db", db))
	srv := startServer(t, bin, []string{"--db", db})
	env := []string{"T=" + token}
	var key string
	for _, s := range platformBlock {
		if strings.HasPrefix(s.command, "T=") {
			continue // the token: ours
		}
		cmd := strings.ReplaceAll(s.command, "localhost:8080", strings.TrimPrefix(srv.Base, "http://"))
		cmd = regexp.MustCompile(`gak_[A-Z0-9]{26}`).ReplaceAllString(cmd, key)
		out := run(t, cmd, env)
		if k := regexp.MustCompile(`"key":"(gak_\w+)"`).FindStringSubmatch(out); k != nil {
			key = k[1]
		}
		s.check(t, out)
	}
}

// TestREADMECommandsExist: every command line the README shows
// ("groupanalytics …", in its blocks and its text) names a command, and
// every flag it gives is one of that command's; every flag of the
// configuration table is serve's.
func TestREADMECommandsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	readme := readDoc(t, "README.md")
	bin := buildBinary(t)
	helps := map[string]string{}
	help := func(command string) string {
		if _, ok := helps[command]; !ok {
			out, _ := exec.Command(bin, append(strings.Fields(command), "--help")...).CombinedOutput()
			helps[command] = string(out)
		}
		return helps[command]
	}
	commandLine := regexp.MustCompile(`(?m)groupanalytics ([a-z][a-z -]*?)( --[^\n` + "`" + `#]*|)(?:\s*#.*)?$`)
	flag := regexp.MustCompile(`--([a-z][a-z-]*)`)
	checked := 0
	for _, m := range commandLine.FindAllStringSubmatch(readme, -1) {
		command := strings.TrimSpace(m[1])
		if command == "" || strings.HasPrefix(command, "demo:") {
			continue
		}
		usage := help(command)
		if !strings.HasPrefix(usage, "usage: groupanalytics "+command) {
			t.Errorf("the README shows groupanalytics %s, which is not a command:\n%s", command, usage)
			continue
		}
		for _, f := range flag.FindAllStringSubmatch(m[2], -1) {
			if !strings.Contains(usage, "  -"+f[1]+" ") && !strings.Contains(usage, "  -"+f[1]+"\n") {
				t.Errorf("the README gives groupanalytics %s --%s, which it does not take", command, f[1])
			}
		}
		checked++
	}
	serve := help("serve")
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| `GROUPANALYTICS_").FindAllStringSubmatch(readme, -1) {
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

// check compares what the command printed with what the README shows.
func (s step) check(t *testing.T, got string) {
	t.Helper()
	if !matches(s.want, got) {
		t.Errorf("$ %s\ngot:\n%s\nthe README shows:\n%s", s.command, shorten(got), s.want)
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
			if k := regexp.MustCompile(`gak_\w+`).FindString(line); k != "" && keys[school] == "" {
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

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
