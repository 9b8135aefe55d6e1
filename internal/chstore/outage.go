package chstore

import (
	"log/slog"
	"time"
)

// outageLogEvery is how often the applier logs an outage's failures at
// most: with a shard down, every school waiting on it fails each second.
var outageLogEvery = time.Minute

// outageLog gathers the applier's failures, so that an outage logs its
// first failure at once, then a line an interval with counts, and a line
// when the applier's rounds succeed again.
type outageLog struct {
	log      *slog.Logger
	since    time.Time // the first failure of the outage; zero: none
	logged   time.Time // when its last line was logged
	failures int       // since that line
	groups   map[string]bool
	last     error
}

// failed notes a failure at now, of the groups' apply (none: of the log's
// reading, or of the leadership).
func (o *outageLog) failed(now time.Time, err error, groups ...string) {
	if o.since.IsZero() {
		o.since = now
	}
	if o.groups == nil {
		o.groups = map[string]bool{}
	}
	o.failures++
	for _, g := range groups {
		o.groups[g] = true
	}
	o.last = err
}

// roundDone logs what a round of the applier calls for, at now: the
// failures gathered, when an interval has passed since the last line (or
// none was logged yet), and the outage's end when nothing failed and
// nothing waits to be tried again (ongoing: something does).
func (o *outageLog) roundDone(now time.Time, ongoing bool) {
	switch {
	case o.since.IsZero():
	case !ongoing:
		if o.failures > 0 {
			o.flush(now)
		}
		o.log.Info("write-behind log applied again", "outage", now.Sub(o.since).Round(time.Second).String())
		*o = outageLog{log: o.log}
	case o.failures > 0 && (o.logged.IsZero() || now.Sub(o.logged) >= outageLogEvery):
		o.flush(now)
	}
}

// flush logs the failures gathered since the last line.
func (o *outageLog) flush(now time.Time) {
	o.log.Warn("write-behind log not applied", "failures", o.failures, "groups", len(o.groups),
		"since", o.since.UTC().Format(time.RFC3339), "error", o.last)
	o.logged, o.failures, o.groups = now, 0, nil
}
