package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// Writer writes schools' days to a sink and keeps the run's manifest. Its
// files are put by a few workers at once (an object store answers each
// put in a round trip), with as many waiting at most: what it holds is
// bounded whatever the run's size.
type Writer struct {
	Engine   *report.Engine
	Sink     Sink
	Format   string
	Manifest Manifest
	encoder  *Encoder
	buf      bytes.Buffer

	puts    chan put
	workers sync.WaitGroup
	pending sync.WaitGroup // the files of the school being written
	mu      sync.Mutex
	err     error // the first put that failed
}

// put is a file to put.
type put struct {
	ctx  context.Context
	key  string
	body []byte
}

// putters are the workers putting a run's files at once, by default: a
// sink may say how many it takes (parallelPuts).
const putters = 8

// parallelPuts is a sink that says how many files it takes at once.
type parallelPuts interface{ Parallel() int }

// NewWriter begins a run of format into sink at now. Close ends it.
func NewWriter(engine *report.Engine, sink Sink, format string, now time.Time) *Writer {
	n := putters
	if p, ok := sink.(parallelPuts); ok {
		n = p.Parallel()
	}
	w := &Writer{Engine: engine, Sink: sink, Format: format, encoder: NewEncoder(format), puts: make(chan put, n),
		Manifest: Manifest{SchemaVersion: SchemaVersion, RunID: now.UTC().Format("20060102T150405.000Z"), Format: format,
			StartedAt: now.UTC(), Files: []ManifestFile{}, Rewritten: []ManifestDay{}}}
	for range n {
		w.workers.Go(func() {
			for p := range w.puts {
				if w.failed() == nil {
					if err := w.Sink.Put(p.ctx, p.key, p.body); err != nil {
						w.fail(err)
					}
				}
				w.pending.Done()
			}
		})
	}
	return w
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func (w *Writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close stops the workers.
func (w *Writer) Close() {
	close(w.puts)
	w.workers.Wait()
}

// WriteSchool writes the files of the school's days, every table of
// every day (a day without use has files without student rows), and
// returns, once they are all put, the students its files hold, by id.
func (w *Writer) WriteSchool(ctx context.Context, group analytics.Group, days analytics.DayRange, now time.Time) ([]string, error) {
	var students []string
	err := Build(ctx, w.Engine, group, days, now, func(f *SchoolDayFiles) error {
		for _, s := range f.Students {
			students = append(students, s.StudentID)
		}
		for _, table := range Tables {
			if err := w.encoder.Encode(f, table, &w.buf); err != nil {
				return err
			}
			p := Path(table, f.Day, group.ID, w.Format)
			w.Manifest.Files = append(w.Manifest.Files, Describe(p, table, f, group.ID, w.buf.Bytes()))
			if err := w.failed(); err != nil {
				return err
			}
			w.pending.Add(1)
			w.puts <- put{ctx, p, bytes.Clone(w.buf.Bytes())}
		}
		w.widen(f.Day)
		return nil
	})
	w.pending.Wait()
	if err == nil {
		err = w.failed()
	}
	slices.Sort(students)
	return slices.Compact(students), err
}

// widen makes the manifest's range hold day.
func (w *Writer) widen(day analytics.Day) {
	d := day.String()
	if w.Manifest.StartDate == "" || d < w.Manifest.StartDate {
		w.Manifest.StartDate = d
	}
	if d > w.Manifest.EndDate {
		w.Manifest.EndDate = d
	}
}

// syncer is a sink that makes what it was given durable at once (a
// folder), rather than file by file.
type syncer interface{ Sync() error }

// Finish writes the run's manifest, last, at now: a reader that finds
// it finds every file it names. A folder's files are synced to its disk
// before the manifest, and the manifest after.
func (w *Writer) Finish(ctx context.Context, now time.Time) error {
	s, syncs := w.Sink.(syncer)
	if syncs {
		if err := s.Sync(); err != nil {
			return err
		}
	}
	w.Manifest.FinishedAt = now.UTC()
	body, err := json.MarshalIndent(w.Manifest, "", "  ")
	if err != nil {
		return fmt.Errorf("warehouse manifest: %w", err)
	}
	if err := w.Sink.Put(ctx, ManifestPath(w.Manifest.RunID), append(body, '\n')); err != nil {
		return err
	}
	if syncs {
		return s.Sync()
	}
	return nil
}
