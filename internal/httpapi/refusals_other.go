//go:build !linux

package httpapi

import "time"

// sleepPrecisely sleeps d as the runtime's timers can (elsewhere than on
// Linux, the gate's grid is only as fine as they are).
func sleepPrecisely(d time.Duration) { time.Sleep(d) }
