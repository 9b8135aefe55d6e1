package httpapi

import (
	"syscall"
	"time"
)

// sleepPrecisely sleeps d, to the microsecond, blocking its thread: a
// sleep the runtime's poller would round to whole milliseconds. A signal
// may end it early; the gate then sleeps again.
func sleepPrecisely(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
