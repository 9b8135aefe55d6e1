package main

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"groupanalytics/internal/digest/mailtest"
	"groupanalytics/internal/stores/storetest"
)

// TestDigestOnceOverTwoProcessesAndARestart: two server processes on one
// PostgreSQL send the week's digests, looking every 100 ms; then one is
// killed and started again. Each recipient gets one digest.
func TestDigestOnceOverTwoProcessesAndARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes")
	}
	mail := mailtest.Start(t, mailtest.Options{})
	stores := []string{"--db", storetest.NewPostgresDatabase(t)}
	bin := buildBinary(t)
	setupGroup(t, bin, stores, "north")
	const recipients = 5
	for i := range recipients {
		runBinary(t, bin, append([]string{"recipient", "add", "--group", "north", "--address", fmt.Sprintf("staff%d@north.example", i)}, stores...)...)
	}
	serve := append(stores, "--smtp-url", "smtp://"+mail.Addr, "--public-url", "https://analytics.example", "--digest-interval", "100ms")
	first, second := startServer(t, bin, serve), startServer(t, bin, serve)
	mail.WaitFor(t, recipients, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	first.Cmd.Process.Signal(syscall.SIGKILL)
	first.Cmd.Wait()
	startServer(t, bin, serve)
	time.Sleep(time.Second) // ten rounds of each
	second.Stop()

	got := map[string]int{}
	for _, m := range mail.Messages() {
		got[m.To[0]]++
	}
	for i := range recipients {
		if to := fmt.Sprintf("staff%d@north.example", i); got[to] != 1 {
			t.Errorf("%s got %d digests, want 1", to, got[to])
		}
	}
	if len(got) != recipients {
		t.Errorf("digests went to %v", got)
	}
}
