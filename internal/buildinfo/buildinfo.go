// Package buildinfo tells which build of the service is running: for the
// version command, /healthz and the metrics.
package buildinfo

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"sync"
)

// Version is the release, set when building one:
//
//	go build -ldflags "-X groupanalytics/internal/buildinfo.Version=v1.4.0" ./cmd/groupanalytics
//
// Otherwise it is the module's version as Go recorded it ("(devel)" for a
// build from a checkout).
var Version = ""

// Info describes the running build.
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"` // the commit built from
	Time     string `json:"commitTime,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built with uncommitted changes
	Go       string `json:"go"`
}

// Get returns the running build's information.
var Get = sync.OnceValue(func() Info {
	info := Info{Version: Version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		info.Version = cmp.Or(info.Version, "unknown")
		return info
	}
	info.Version = cmp.Or(info.Version, bi.Main.Version, "(devel)")
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
})
