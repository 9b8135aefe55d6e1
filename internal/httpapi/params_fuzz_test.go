package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"groupanalytics/internal/analytics"
)

// FuzzReportParams: any query string and body give report parameters, or
// an Invalid or TooLarge error with a message for the caller; never a
// panic or an error of another kind.
func FuzzReportParams(f *testing.F) {
	for _, seed := range [][2]string{
		{"startDate=2025-01-01&endDate=2025-01-07", ""},
		{"students=TRUE&interval=week", `{"startDate": "2025-03-07T10:00:00 02:00"}`},
		{"startDate=", `{"students": true}`},
		{"startDate=%zz", ""},
		{"format=xml", `{"format": "CSV"}`},
		{"", `{"startDate": "2025-01-01", "bogus": 1}`},
		{"", `{"students": "yes"}`},
		{"", "{\"startDate\": \"\xff\"}"},
		{"", `{"endDate": null} trailing`},
		{"startDate=0000-01-01&startDate=2025-01-01", "[]"},
	} {
		f.Add(seed[0], []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, rawQuery string, body []byte) {
		r := httptest.NewRequest("POST", "/api/groups/chat", bytes.NewReader(body))
		r.URL.RawQuery = rawQuery
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, maxReportBody)
		_, _, _, err := readQuery(r)
		if err == nil {
			return
		}
		code, msg := analytics.ErrorCode(err), analytics.ErrorMessage(err)
		if code != analytics.Invalid && code != analytics.TooLarge || msg == "" || strings.Contains(msg, "json:") {
			t.Fatalf("?%s %q: %v (%s)", rawQuery, body, err, code)
		}
	})
}
