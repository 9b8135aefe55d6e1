package rollup

import (
	"context"

	"groupanalytics/internal/analytics"
)

// Call is one AppendEvents call waiting for a store's writer, which
// merges the calls waiting at the same moment into one write.
type Call struct {
	Ctx    context.Context
	Events []analytics.Event
	Done   chan Done // told once, when the write holding the events ends
}

// Done is what became of a Call.
type Done struct {
	Result analytics.AppendResult
	Err    error
}

// NewCall returns a call for events, waiting for its writer.
func NewCall(ctx context.Context, events []analytics.Event) *Call {
	return &Call{Ctx: ctx, Events: events, Done: make(chan Done, 1)}
}

// MaxMergedEvents bounds the events of one merged write.
const MaxMergedEvents = 50_000
