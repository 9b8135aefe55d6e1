package platform

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"groupanalytics/internal/analytics"
)

// FuzzDecodeEvent: any bytes are refused with an Invalid error, or make an
// event whose text is valid UTF-8 without control characters or U+FFFD,
// whose time lies in the accepted window, and whose day is that time's.
func FuzzDecodeEvent(f *testing.F) {
	for _, seed := range []string{
		`{"id":"e1","groupId":"g","studentId":"s1","studentName":"Ada","occurredAt":"2026-11-20T10:00:00Z","kind":"chat.message_sent","chatType":"main"}`,
		`{"id":"e1","groupId":"g","studentId":"s1","occurredAt":"2026-11-20T10:00:00+01:00","kind":"live_lecture.session_created"}`,
		`{"id":"e\ud800","groupId":"g","studentId":"s1","occurredAt":"2026-11-20T10:00:00Z","kind":"live_lecture.session_created"}`,
		"{\"id\":\"e\xff\",\"groupId\":\"g\",\"studentId\":\"s1\",\"occurredAt\":\"2026-11-20T10:00:00Z\",\"kind\":\"live_lecture.session_created\"}",
		`{"id":" ","groupId":"g","studentId":"s1","studentName":"","occurredAt":"2026-11-20T10:00:00+24:00","kind":"x"}`,
		`{"id":1}`, `[]`, `null`, `{"id":"e","id":"f"}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	loc, _ := analytics.LoadZone("Asia/Kathmandu")
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := decodeEvent(json.RawMessage(raw))
		var e analytics.Event
		if err == nil {
			e, err = validate(in, loc, now)
		}
		if err != nil {
			if analytics.ErrorCode(err) != analytics.Invalid || analytics.ErrorMessage(err) == "" {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		for _, text := range []string{e.ID, e.StudentID, e.StudentName} {
			if !utf8.ValidString(text) || strings.ContainsRune(text, utf8.RuneError) || strings.IndexFunc(text, unicode.IsControl) >= 0 {
				t.Fatalf("%q: accepted text %q", raw, text)
			}
		}
		if e.ID == "" || strings.TrimSpace(e.StudentID) == "" || e.OccurredAt.Before(earliest) || e.OccurredAt.After(now.Add(MaxFutureSkew)) {
			t.Fatalf("%q: accepted %+v", raw, e)
		}
		if e.Day != analytics.DayOf(e.OccurredAt, loc) || e.Metric >= analytics.NumMetrics {
			t.Fatalf("%q: day or metric wrong in %+v", raw, e)
		}
	})
}
