package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// Writer writes schools' days to a sink and keeps the run's manifest.
type Writer struct {
	Engine   *report.Engine
	Sink     Sink
	Format   string
	Manifest Manifest
	buf      bytes.Buffer
}

// NewWriter begins a run of format into sink at now.
func NewWriter(engine *report.Engine, sink Sink, format string, now time.Time) *Writer {
	return &Writer{Engine: engine, Sink: sink, Format: format, Manifest: Manifest{SchemaVersion: SchemaVersion,
		RunID: now.UTC().Format("20060102T150405.000Z"), Format: format, StartedAt: now.UTC(), Files: []ManifestFile{}, Rewritten: []ManifestDay{}}}
}

// WriteSchool writes the files of the school's days, every table of
// every day (a day without use has files without student rows), and
// returns the students its files hold, by id.
func (w *Writer) WriteSchool(ctx context.Context, group analytics.Group, days analytics.DayRange, now time.Time) ([]string, error) {
	var students []string
	err := Build(ctx, w.Engine, group, days, now, func(f *SchoolDayFiles) error {
		for _, s := range f.Students {
			students = append(students, s.StudentID)
		}
		for _, table := range Tables {
			if err := Encode(f, table, w.Format, &w.buf); err != nil {
				return err
			}
			p := Path(table, f.Day, group.ID, w.Format)
			if err := w.Sink.Put(ctx, p, w.buf.Bytes()); err != nil {
				return err
			}
			w.Manifest.Files = append(w.Manifest.Files, Describe(p, table, f, group.ID, w.buf.Bytes()))
		}
		w.widen(f.Day)
		return nil
	})
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

// Finish writes the run's manifest, last, at now: a reader that finds
// it finds every file it names.
func (w *Writer) Finish(ctx context.Context, now time.Time) error {
	w.Manifest.FinishedAt = now.UTC()
	body, err := json.MarshalIndent(w.Manifest, "", "  ")
	if err != nil {
		return fmt.Errorf("warehouse manifest: %w", err)
	}
	return w.Sink.Put(ctx, ManifestPath(w.Manifest.RunID), append(body, '\n'))
}
