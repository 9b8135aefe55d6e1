package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// house is the project's packages from the ground up, as docs/architecture.md draws
// them: each may import only packages before it.
// Packages on one line sit side by side and import nothing of each other.
var house = [][]string{
	{"analytics", "buildinfo", "cache", "dashboard", "roster"},
	{"metrics", "rollup", "signin", "signin/oidctest", "lti", "lti/ltitest", "writebehind"},
	{"sqlstore", "chstore"},
	{"stores"},
	{"stores/storetest", "digest/mailtest", "report", "platform"},
	{"warehouse"},
	{"httpapi", "bench", "digest"},
	{"cli"},
}

// TestTheHouse reads the imports of every package of the module: no
// package imports one above it or beside it, the domain imports nothing
// of ours, and only tests import storetest, mailtest, oidctest and
// ltitest.
func TestTheHouse(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "groupanalytics/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	floor := map[string]int{}
	for i, level := range house {
		for _, p := range level {
			floor[p] = i
		}
	}
	const ours = "groupanalytics/internal/"
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Fields(line)
		pkg, imports := strings.TrimPrefix(fields[0], ours), fields[1:]
		if pkg == "groupanalytics/cmd/groupanalytics" {
			continue
		}
		at, known := floor[pkg]
		if !known {
			t.Errorf("package %s is not in the house: add it to docs/architecture.md and to this test", pkg)
			continue
		}
		for _, imp := range imports {
			dep, isOurs := strings.CutPrefix(imp, ours)
			if !isOurs {
				continue
			}
			switch {
			case pkg == "analytics":
				t.Errorf("analytics imports %s: the domain imports nothing of ours", dep)
			case dep == "stores/storetest" || dep == "digest/mailtest" || dep == "signin/oidctest" || dep == "lti/ltitest":
				t.Errorf("%s imports %s, which is for tests", pkg, dep)
			case floor[dep] >= at:
				t.Errorf("%s imports %s, which does not sit below it", pkg, dep)
			}
		}
	}
}

// engines are the packages of the stores' engines: only package stores
// (with storetest, its helper for tests) and the engines' own tests import
// them; the rest of the house knows the contracts alone.
var engines = []string{"sqlstore", "chstore"}

// TestStoresOpenedInOnePlace reads the imports of every package and of its
// tests: none outside stores and the engines imports an engine.
func TestStoresOpenedInOnePlace(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "groupanalytics/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const ours = "groupanalytics/internal/"
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], ours)
		if pkg == "stores" || pkg == "stores/storetest" || slices.Contains(engines, pkg) {
			continue
		}
		for _, imp := range fields[1:] {
			if dep, _ := strings.CutPrefix(imp, ours); slices.Contains(engines, dep) {
				t.Errorf("%s imports %s: open stores through package stores and use the contracts", pkg, dep)
			}
		}
	}
}

// writeBehindTypes are the types of the write-behind log's contract,
// declared once, in package writebehind.
var writeBehindTypes = []string{"Coordinator", "Placement", "LockMode", "GroupLock", "GroupsLock", "LogLock"}

// TestWriteBehindContractOnce: no package but writebehind declares a type
// of the write-behind log's contract, so that no store keeps a twin of it.
func TestWriteBehindContractOnce(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range productionGo(t) {
		if strings.HasPrefix(name, "internal/writebehind/") {
			continue
		}
		f, err := parser.ParseFile(fset, "../../"+name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gen, ok := d.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				if name := spec.(*ast.TypeSpec).Name.Name; slices.Contains(writeBehindTypes, name) {
					t.Errorf("%s declares %s, a type of package writebehind's", f.Name.Name, name)
				}
			}
		}
	}
}

// TestRoomsStaySmall: no file of production Go is over 600 lines, so that
// each can be read in one sitting; a file that grows past it is split by
// role (as sqlstore's dir_, usage_ and ch_ files are, and chstore's files
// by the stage of a write).
func TestRoomsStaySmall(t *testing.T) {
	for _, name := range productionGo(t) {
		data, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(data), "\n"); lines > 600 {
			t.Errorf("%s has %d lines: split it by role (at most 600)", name, lines)
		}
	}
}

// clickHouseWrite is the path of a write on ClickHouse, in the order
// docs/architecture.md tells it: each function and the file of its stage.
var clickHouseWrite = []struct{ file, fn string }{
	{"log.go", "AppendEvents"}, {"log.go", "flushLoop"}, {"log.go", "takePending"}, {"log.go", "logCalls"},
	{"log.go", "logNew"}, {"log.go", "storedOnShards"}, {"log.go", "answerFlush"},
	{"apply.go", "applyLoop"}, {"apply.go", "applyLogged"}, {"settle.go", "Settle"}, {"apply.go", "apply"},
	{"apply.go", "writeGroups"}, {"apply.go", "settleWrites"}, {"place.go", "placeAll"}, {"repair.go", "settled"},
	{"apply.go", "gatherIDs"}, {"apply.go", "prepareWrites"}, {"lookups.go", "readIDSets"}, {"lookups.go", "storedIDs"},
	{"lookups.go", "ordinalsOf"}, {"state.go", "stateAt"}, {"apply.go", "recordIntents"}, {"apply.go", "insertWrites"},
	{"inserts.go", "insertEvents"}, {"inserts.go", "insertGroupRows"}, {"counts.go", "insertCountsRows"},
	{"replicas.go", "insert"}, {"apply.go", "endWrites"},
}

// TestClickHouseWriteAsDocumented: docs/architecture.md names, in order,
// the functions a ClickHouse write goes through, and each is declared in
// the file of its stage.
func TestClickHouseWriteAsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	at := strings.Index(text, "**A write on ClickHouse**")
	if at < 0 {
		t.Fatal("docs/architecture.md tells no write on ClickHouse")
	}
	for _, step := range clickHouseWrite {
		src, err := os.ReadFile("../../internal/chstore/" + step.file)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^func (\([^)]*\) )?` + step.fn + `[(\[]`).Match(src) {
			t.Errorf("%s is not declared in chstore/%s", step.fn, step.file)
		}
		next := strings.Index(text[at:], "`"+step.fn+"`")
		if step.fn == "insert" {
			next = strings.Index(text[at:], "`sh.insert`")
		}
		if next < 0 {
			t.Errorf("docs/architecture.md does not name %s after the step before it", step.fn)
			continue
		}
		at += next
	}
}

// TestFunctionsStayShort: no function of production Go is over 80 lines;
// one that does several things in a row is split into named steps.
func TestFunctionsStayShort(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range productionGo(t) {
		f, err := parser.ParseFile(fset, "../../"+name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				if lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; lines > 80 {
					t.Errorf("%s: %s has %d lines: split it into named steps (at most 80)", name, fn.Name.Name, lines)
				}
			}
		}
	}
}

// productionGo lists the module's Go files that git tracks, tests and
// test data left out, by their path from the module's root.
func productionGo(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", "../..", "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	var names []string
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasSuffix(name, "_test.go") && !strings.Contains(name, "/testdata/") {
			names = append(names, name)
		}
	}
	return names
}

// TestChangesNameTheNewestMigrations: CHANGES.md names the newest
// migration of each schema, so that a release's entry says which
// migrations it brings (and what upgrade they take).
func TestChangesNameTheNewestMigrations(t *testing.T) {
	changes, err := os.ReadFile(filepath.Join("..", "..", "CHANGES.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"internal/sqlstore/migrations/sqlite", "internal/sqlstore/migrations/postgres", "internal/chstore/migrations"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.sql"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no migrations (%v)", dir, err)
		}
		newest := filepath.Base(slices.Max(files))
		if !strings.Contains(string(changes), newest) {
			t.Errorf("CHANGES.md does not name %s, the newest migration of %s", newest, dir)
		}
	}
}
