package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestVersionNamesItsCommit: a build from a Git checkout prints the commit
// it was built from, so that an operator can tell which code runs.
func TestVersionNamesItsCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a Git checkout: %v", err)
	}
	out, err := exec.Command(buildBinary(t), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("version: %v\n%s", err, out)
	}
	if want := "commit " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("version printed %q, want it to name %q", out, want)
	}
}
