package cli

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress tells how a long command is getting on, on one line of stderr
// rewritten in place, when stderr is a terminal; elsewhere (a log, a
// pipe) it says nothing, so that output stays clean.
type progress struct {
	w    io.Writer
	on   bool
	last time.Time
}

func newProgress(e *env) *progress {
	f, ok := e.stderr.(*os.File)
	on := false
	if ok {
		st, err := f.Stat()
		on = err == nil && st.Mode()&os.ModeCharDevice != 0
	}
	return &progress{w: e.stderr, on: on}
}

// show replaces the line, at most ten times a second unless force is set.
func (p *progress) show(force bool, format string, args ...any) {
	if !p.on || !force && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
}

// done clears the line.
func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
