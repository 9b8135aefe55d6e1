package analytics

import (
	"archive/zip"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sync"
	"time"
)

// zoneinfo is the IANA time zone database (release 2025c) as Go ships it
// in lib/time/zoneinfo.zip. It is built into the binary and always used,
// so that a day is cut the same way on every machine: ingestion on one,
// rebuild on another with an older or newer system database.
//
//go:embed zoneinfo.zip
var zoneinfo []byte

var (
	zoneFiles = sync.OnceValues(func() (map[string]*zip.File, error) {
		r, err := zip.NewReader(bytes.NewReader(zoneinfo), int64(len(zoneinfo)))
		if err != nil {
			return nil, err
		}
		files := make(map[string]*zip.File, len(r.File))
		for _, f := range r.File {
			files[f.Name] = f
		}
		return files, nil
	})
	zones sync.Map // name -> *time.Location
)

// LoadZone returns the time zone of an IANA name from the embedded
// database. "UTC" is UTC; "Local" and names the database lacks are errors.
func LoadZone(name string) (*time.Location, error) {
	if name == "UTC" {
		return time.UTC, nil
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	files, err := zoneFiles()
	if err != nil {
		return nil, fmt.Errorf("LoadZone: embedded database: %w", err)
	}
	f := files[name]
	if f == nil {
		return nil, fmt.Errorf("LoadZone: unknown time zone %q", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("LoadZone(%s): %w", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("LoadZone(%s): %w", name, err)
	}
	loc, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		return nil, fmt.Errorf("LoadZone(%s): %w", name, err)
	}
	actual, _ := zones.LoadOrStore(name, loc)
	return actual.(*time.Location), nil
}
