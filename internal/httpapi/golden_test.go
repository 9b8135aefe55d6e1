package httpapi_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"groupanalytics/internal/stores/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden answers in testdata/golden")

// TestGoldenAnswers keeps one answer of each kind in testdata/golden, as
// the client receives it, so that a change to any response shows in the
// diff. Run with -update to accept a change.
func TestGoldenAnswers(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	key := e.school("golden", "Europe/Berlin")
	e.enrol("golden", "s-1", "Ada Lovelace")
	e.enrol("golden", "s-2", "Grace Hopper")
	e.enrol("golden", "s-3", "Quote \"Comma, Name\"")
	e.send(
		session("golden", "s-1", "2026-11-02T09:00:00+01:00"),
		message("golden", "s-1", "live_lecture", "2026-11-02T09:05:00+01:00"),
		message("golden", "s-1", "tutor_me", "2026-11-03T20:00:00Z"),
		message("golden", "s-2", "flashcard", "2026-11-09T23:30:00Z"),
		message("golden", "s-2", "main", "2026-11-10T08:00:00+01:00"),
	)
	e.school("golden-2", "UTC")
	e.send(message("golden-2", "s-9", "test", "2026-11-04T12:00:00Z"))
	districtKey := e.district("golden-district", "Europe/Berlin", "golden", "golden-2")
	const month = "startDate=2026-11-01&endDate=2026-11-30"
	tests := []struct {
		name, method, path, key string
	}{
		{"group.json", "POST", "/api/groups/live-lecture?" + month, key},
		{"students.json", "POST", "/api/groups/chat?" + month + "&students=true", key},
		{"interval.json", "POST", "/api/groups/chat?" + month + "&interval=week", key},
		{"students.csv", "POST", "/api/groups/chat?" + month + "&students=true&format=csv", key},
		{"district.json", "POST", "/api/groups/chat?" + month, districtKey},
		{"district-schools.csv", "POST", "/api/groups/chat?" + month + "&schools=true&format=csv", districtKey},
		{"adoption.json", "GET", "/api/adoption?" + month, districtKey},
		{"error-unauthorized.json", "POST", "/api/groups/chat", "gak_WRONG"},
		{"error-missing-params.json", "POST", "/api/groups/chat?startDate=", key},
		{"error-invalid-date.json", "POST", "/api/groups/chat?startDate=next+week", key},
		{"error-range.json", "POST", "/api/groups/chat?startDate=2026-12-01&endDate=2026-11-01", key},
		{"error-not-found.json", "GET", "/api/groups/nothing", ""},
		{"error-method.json", "GET", "/api/groups/chat", ""},
		{"error-no-token.json", "GET", "/v1/admin/groups", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.do(tt.method, tt.path, tt.key, "").body
			file := filepath.Join("testdata", "golden", tt.name)
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run the test with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s answers\n%s\nwant (%s)\n%s", tt.method, tt.path, got, file, want)
			}
		})
	}
}
