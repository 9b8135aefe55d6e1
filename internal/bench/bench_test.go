package bench

import (
	"testing"
	"time"

	"groupanalytics/internal/analytics"
)

func TestPercentileIsNearestRank(t *testing.T) {
	values := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for p, want := range map[int]float64{50: 5, 95: 10, 99: 10, 10: 1, 90: 9} {
		if got := percentile(values, p); got != want {
			t.Errorf("p%d = %v, want %v", p, got, want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing")
	}
}

func TestChatMix(t *testing.T) {
	metrics, weights, err := chatWeights("tutor_me=3,main=1")
	if err != nil || len(metrics) != 2 || weights[0] != 0.75 || weights[1] != 1 {
		t.Fatalf("%v %v %v", metrics, weights, err)
	}
	for _, bad := range []string{"gossip=1", "tutor_me", "tutor_me=x", "main=0", "main=-1"} {
		if _, _, err := chatWeights(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSameAnswerTreatsMissingBaselineRowsAsZeros(t *testing.T) {
	service := answer{"2025-01-01|s1": {3, 1, 2}, "2025-01-01|s2": {0, 0, 0}}
	if !sameAnswer(service, answer{"2025-01-01|s1": {3, 1, 2}}) {
		t.Error("a student without events is all zeros in the service and absent from the baseline")
	}
	if sameAnswer(service, answer{"2025-01-01|s1": {3, 1, 1}}) {
		t.Error("different values compared equal")
	}
	if sameAnswer(answer{"2025-01-01|s3": {1}}, answer{}) {
		t.Error("a non-zero row the baseline lacks compared equal")
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	s := Scale{Students: 50, Days: 5, Active: 0.5, EventsPerDay: 3, SessionShare: 0.2, ChatMix: DefaultChatMix, Seed: 9}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	collect := func() []analytics.Event {
		var all []analytics.Event
		if _, err := s.generate(group{"g", 50}, now, 7, func(b []analytics.Event) error {
			all = append(all, b...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return all
	}
	a, b := collect(), collect()
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d events", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("event %d differs: %+v, %+v", i, a[i], b[i])
		}
		if a[i].Day < s.firstDay(now) || a[i].Day >= s.firstDay(now)+5 || a[i].OccurredAt.After(now) {
			t.Fatalf("event %d outside the days: %+v", i, a[i])
		}
	}
}
