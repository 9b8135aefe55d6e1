package httpapi

import (
	"archive/zip"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
)

// WriteStudentArchive writes a zip of what the service holds about a
// student: student.json (who, their classes, what the archive holds),
// their events as JSON lines and as CSV, and the access log's entries
// about them, as JSON lines and as CSV.
func WriteStudentArchive(w io.Writer, d platform.StudentData, now time.Time) error {
	z := zip.NewWriter(w)
	file := func(name string, write func(io.Writer) error) error {
		f, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: now})
		if err != nil {
			return err
		}
		return write(f)
	}
	type classJSON struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		StartDate string `json:"startDate,omitempty"`
		EndDate   string `json:"endDate,omitempty"`
	}
	classes := listOf(d.Classes, func(c analytics.Class) classJSON { return classJSON{c.ID, c.Name, c.Start, c.End} })
	// As the platform sends events: events.jsonl may be sent again as it is.
	events := listOf(d.Events, func(e analytics.Event) platform.EventInput {
		kind, chatType := e.Metric.EventKind()
		return platform.EventInput{ID: e.ID, GroupID: e.GroupID, StudentID: e.StudentID,
			OccurredAt: analytics.FormatTime(e.OccurredAt), Kind: kind, ChatType: chatType}
	})
	access := listOf(d.Access, accessJSON)
	err := file("student.json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"groupId": d.Student.GroupID, "studentId": d.Student.ID, "name": d.Student.Name, "classes": classes,
			"events": len(events), "accessLogEntries": len(access), "exportedAt": now.UTC().Format(time.RFC3339),
		})
	})
	if err == nil {
		err = file("events.jsonl", func(w io.Writer) error { return writeLines(w, events) })
	}
	if err == nil {
		err = file("events.csv", func(w io.Writer) error {
			out := csv.NewWriter(w)
			out.UseCRLF = true
			out.Write([]string{"id", "occurredAt", "kind", "chatType"})
			for _, e := range events {
				out.Write([]string{e.ID, e.OccurredAt, e.Kind, e.ChatType})
			}
			out.Flush()
			return out.Error()
		})
	}
	if err == nil {
		err = file("access-log.jsonl", func(w io.Writer) error { return writeLines(w, access) })
	}
	if err == nil {
		err = file("access-log.csv", func(w io.Writer) error { return writeAccessCSV(w, access) })
	}
	if err != nil {
		return err
	}
	return z.Close()
}

// writeLines writes each value as a line of JSON.
func writeLines[T any](w io.Writer, values []T) error {
	enc := json.NewEncoder(w)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// exportStudent answers a zip of what the service holds about a student
// (WriteStudentArchive).
func (s *Server) exportStudent(r *http.Request) (int, any, error) {
	groupID, studentID := r.PathValue("groupId"), r.PathValue("studentId")
	d, err := s.platform.StudentData(r.Context(), groupID, studentID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, streamed(func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Disposition", `attachment; filename="`+groupID+`-student-data.zip"`)
		_ = WriteStudentArchive(w, d, s.now()) // failing, the client has gone: the status is sent
	}), nil
}
