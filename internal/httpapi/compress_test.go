package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"groupanalytics/internal/stores/storetest"
)

// TestCompression: large answers (JSON and CSV) come compressed with the
// encoding the client prefers, gzip on a tie, and decode to the plain
// answer; small answers and clients that accept none come plain.
func TestCompression(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	key := e.school("north", "UTC")
	for i := range 300 {
		e.enrol("north", fmt.Sprintf("s%03d", i), fmt.Sprintf("Student %03d", i))
	}
	e.send(message("north", "s001", "main", "2025-01-02T10:00:00Z"))
	const path = "/api/groups/chat?startDate=2025-01-01&endDate=2025-01-31&students=true"
	for _, format := range []string{"json", "csv"} {
		plain := e.do("POST", path+"&format="+format, key, "", "Accept-Encoding", "identity")
		if plain.status != http.StatusOK || plain.header.Get("Content-Encoding") != "" || len(plain.body) < 10_000 {
			t.Fatalf("%s plain: %d %q, %d bytes", format, plain.status, plain.header.Get("Content-Encoding"), len(plain.body))
		}
		for _, c := range []struct{ accept, want string }{
			{"gzip", "gzip"},
			{"zstd", "zstd"},
			{"gzip, deflate, br, zstd", "gzip"},
			{"gzip;q=1.0, zstd;q=0.5", "gzip"},
			{"gzip;q=0.5, zstd", "zstd"},
			{"br", ""},
		} {
			resp := e.do("POST", path+"&format="+format, key, "", "Accept-Encoding", c.accept)
			if got := resp.header.Get("Content-Encoding"); got != c.want {
				t.Errorf("%s, Accept-Encoding %q: Content-Encoding %q, want %q", format, c.accept, got, c.want)
			}
			if !bytes.Equal(resp.body, plain.body) {
				t.Errorf("%s, %s: the decoded answer differs from the plain one", format, c.accept)
			}
			if c.want != "" && resp.sent*4 > len(plain.body) {
				t.Errorf("%s, %s: %d bytes sent for %d, want a quarter or less", format, c.want, resp.sent, len(plain.body))
			}
			if resp.header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("%s, %s: Vary %q", format, c.accept, resp.header.Get("Vary"))
			}
		}
	}
	if resp := e.do("GET", "/healthz", "", "", "Accept-Encoding", "gzip"); resp.header.Get("Content-Encoding") != "" {
		t.Errorf("a small answer is compressed: %q", resp.header.Get("Content-Encoding"))
	}
}
