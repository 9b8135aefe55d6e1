package chstore

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestOutageLog: an outage of ten minutes in which 300 schools fail every
// second logs its first failure at once, then a line a minute with the
// counts, then its end: not a line per school per second.
func TestOutageLog(t *testing.T) {
	var out bytes.Buffer
	o := outageLog{log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))}
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	down := errors.New("shard 2: connection refused")
	o.roundDone(start, false) // nothing failed, nothing to say
	for sec := range 600 {
		now := start.Add(time.Duration(sec) * time.Second)
		for g := range 300 {
			o.failed(now, down, "school-"+string(rune('a'+g%26))+string(rune('a'+g/26)))
		}
		o.roundDone(now, true)
	}
	o.roundDone(start.Add(600*time.Second), false)
	o.roundDone(start.Add(601*time.Second), false)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 12 {
		t.Fatalf("%d lines, want 12 (the first failure, 10 a minute, the end):\n%s", len(lines), out.String())
	}
	for _, want := range []struct {
		line int
		text string
	}{
		{0, `level=WARN msg="write-behind log not applied" failures=300 groups=300 since=2026-11-29T10:00:00Z error="shard 2: connection refused"`},
		{1, `level=WARN msg="write-behind log not applied" failures=18000 groups=300 since=2026-11-29T10:00:00Z`},
		{10, `level=WARN msg="write-behind log not applied" failures=`},
		{11, `level=INFO msg="write-behind log applied again" outage=10m0s`},
	} {
		if !strings.HasPrefix(lines[want.line], want.text) {
			t.Errorf("line %d: %s\nwant %s", want.line, lines[want.line], want.text)
		}
	}
}
