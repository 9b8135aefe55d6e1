package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// generatedClient is a client generator an integrator would use, and how
// the session of testdata/clients is generated, built and run with it in
// a copy of that folder: each command a line of words, the last the
// session, given the server's address, a platform token and the Monday.
type generatedClient struct {
	name  string
	needs string // a command without which the client cannot be tried
	steps [][]string
}

// generatedClients are the generators, pinned by version. The Go clients
// build with -trimpath, so that Go's build cache keeps a generated client
// that has not changed though each run's folder is new.
var generatedClients = []generatedClient{
	{name: "oapi-codegen", needs: "go", steps: [][]string{
		{"go", "run", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2", "-generate", "types,client",
			"-package", "oapiclient", "-o", "oapiclient/client.gen.go", "openapi.json"},
		{"go", "build", "-trimpath", "-o", "session", "./oapi"},
		{"./session", "-base", "{base}", "-token", "{token}", "-monday", "{monday}"},
	}},
	{name: "ogen", needs: "go", steps: [][]string{
		{"go", "run", "github.com/ogen-go/ogen/cmd/ogen@v1.25.0", "--target", "ogenclient", "--package", "ogenclient", "--clean", "openapi.json"},
		{"go", "build", "-trimpath", "-o", "session", "./ogen"},
		{"./session", "-base", "{base}", "-token", "{token}", "-monday", "{monday}"},
	}},
	{name: "openapi-typescript", needs: "npm", steps: [][]string{
		{"npm", "ci", "--no-audit", "--no-fund", "--prefix", "ts"},
		{"cp", "openapi.json", "ts/openapi.json"},
		{"npm", "run", "--prefix", "ts", "generate"},
		{"npm", "run", "--prefix", "ts", "build"},
		{"node", "ts/session.js", "{base}", "{token}", "{monday}"},
	}},
}

// TestGeneratedClients: an integrator's first step, a client generated
// from the served /openapi.json, works with the generators people use:
// oapi-codegen and ogen in Go, and openapi-typescript with openapi-fetch
// where Node is installed (CI installs it). Each generates, builds and runs
// one session against a server of its own: two schools and a district made
// through the admin API, events sent, a school's live lecture reports by
// week and chat reports of each student by week, the district's chat
// reports by school, the list of who stopped, and a refused key as the
// client's typed 403. Each session prints the same answers: those the
// events make.
func TestGeneratedClients(t *testing.T) {
	if testing.Short() {
		t.Skip("generates, builds and runs clients with the generators' own toolchains")
	}
	bin := buildBinary(t)
	monday := sessionMonday(time.Now())
	want := sessionAnswers(monday)
	for _, c := range generatedClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each client has a folder, store and server of its own
			if _, err := exec.LookPath(c.needs); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is not installed", c.needs)
				}
				t.Skipf("%s is not installed", c.needs)
			}
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-R", filepath.Join("testdata", "clients")+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("copy the sessions: %v\n%s", err, out)
			}
			db := filepath.Join(t.TempDir(), "store.db")
			runBinary(t, bin, "migrate", "--db", db)
			token := regexp.MustCompile(`gat_\w+`).FindString(runBinary(t, bin, "token", "create", "--db", db))
			srv := startServer(t, bin, []string{"--db", db})
			resp, err := client.Get(srv.Base + "/openapi.json")
			if err != nil {
				t.Fatal(err)
			}
			doc, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "openapi.json"), doc, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			var out string
			for _, step := range c.steps {
				out = runStep(t, dir, step, strings.NewReplacer("{base}", srv.Base, "{token}", token, "{monday}", monday))
			}
			if out != want {
				t.Errorf("the session printed\n%s\nwant\n%s", out, want)
			}
		})
	}
}

// runStep runs one command of a client's steps in dir, its arguments'
// placeholders filled in, and returns what it printed to its standard
// output.
func runStep(t *testing.T, dir string, step []string, fill *strings.Replacer) string {
	t.Helper()
	args := make([]string, len(step))
	for i, a := range step {
		args[i] = fill.Replace(a)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(step, " "), err, out, stderr.String())
	}
	return string(out)
}

// sessionMonday is the Monday the sessions' two weeks begin on: three
// weeks or more before today, so that both students who used the service
// count as stopped in the list of who stopped (after 7 days).
func sessionMonday(now time.Time) string {
	d := now.UTC().AddDate(0, 0, -21)
	return d.AddDate(0, 0, -(int(d.Weekday())+6)%7).Format(time.DateOnly)
}

// sessionAnswers is what every session prints, its two weeks beginning on
// monday: a session made and a tutor-me message by s1 in the first week,
// a test message by s2 in the second, a session at the other school; s3
// enrolled without use.
func sessionAnswers(monday string) string {
	first, _ := time.Parse(time.DateOnly, monday)
	weeks := []string{first.Format("2006-01-02T15:04:05.000Z"), first.AddDate(0, 0, 7).Format("2006-01-02T15:04:05.000Z")}
	chat := func(total, tutorMe, test int) string {
		return fmt.Sprintf(": Total Messages %d Tutor Me Messages %d Test Messages %d Flashcard Messages 0 Material Messages 0 Live Lecture Messages 0 Main Chat Messages 0",
			total, tutorMe, test)
	}
	return strings.Join([]string{
		"sent: 4 accepted, 0 duplicates",
		"live-lecture group " + weeks[0] + " used 1: Sessions Made 1 Chat Messages 0",
		"live-lecture group " + weeks[1] + " used 0: Sessions Made 0 Chat Messages 0",
		"chat student s1 (Ada) " + weeks[0] + chat(1, 1, 0),
		"chat student s2 (Ben) " + weeks[0] + chat(0, 0, 0),
		"chat student s3 (Cy) " + weeks[0] + chat(0, 0, 0),
		"chat student s1 (Ada) " + weeks[1] + chat(0, 0, 0),
		"chat student s2 (Ben) " + weeks[1] + chat(1, 0, 1),
		"chat student s3 (Cy) " + weeks[1] + chat(0, 0, 0),
		"chat school north (North) used 2" + chat(2, 1, 1),
		"chat school south (South) used 0" + chat(0, 0, 0),
		"last use s3 (Cy): never",
		"last use s1 (Ada): stopped",
		"last use s2 (Ben): stopped",
		"refused: 403 Unauthorized",
	}, "\n") + "\n"
}
