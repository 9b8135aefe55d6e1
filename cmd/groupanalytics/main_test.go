package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binaryDir holds the command the tests build, once for all of them.
var binaryDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "groupanalytics-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binaryDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce  sync.Once
	builtBin   string
	buildError error
)

// buildBinary builds the command, as an operator would from a checkout:
// with the commit recorded, even where the environment's GOFLAGS turn
// Go's VCS stamping off. It builds once; every test runs that binary.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		bin := filepath.Join(binaryDir, "groupanalytics")
		if out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, ".").CombinedOutput(); err != nil {
			buildError = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		builtBin = bin
	})
	if buildError != nil {
		t.Fatal(buildError)
	}
	return builtBin
}
