package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// Scale is the shape of the generated data set.
type Scale struct {
	Students     int     // students of the main group
	Days         int     // days of events, ending yesterday
	Active       float64 // share of students active on a day
	EventsPerDay int     // events per active student-day
	OtherGroups  int     // groups beside the main one
	OtherSize    int     // students of each other group
	SessionShare float64 // share of events that are live lecture sessions
	ChatMix      string  // weights of the chat types, e.g. "tutor_me=30,test=15,…"
	Seed         uint64
}

// Quick is small enough for CI: it finishes in well under a minute.
var Quick = Scale{Students: 1000, Days: 60, Active: 0.3, EventsPerDay: 10, OtherGroups: 2, OtherSize: 200,
	SessionShare: 0.2, ChatMix: DefaultChatMix, Seed: 1}

// Full is the scale of the targets: about 11 million events in the main
// group, and other groups beside it.
var Full = Scale{Students: 10_000, Days: 365, Active: 0.3, EventsPerDay: 10, OtherGroups: 4, OtherSize: 1000,
	SessionShare: 0.2, ChatMix: DefaultChatMix, Seed: 1}

// DefaultChatMix weighs the chat types of chat.message_sent events.
const DefaultChatMix = "tutor_me=30,test=15,flashcard=15,material=15,live_lecture=10,main=15"

// chatWeights parses a chat mix into cumulative weights by metric.
func chatWeights(mix string) ([]analytics.Metric, []float64, error) {
	var metrics []analytics.Metric
	var cumulative []float64
	total := 0.0
	for part := range strings.SplitSeq(mix, ",") {
		name, weight, ok := strings.Cut(strings.TrimSpace(part), "=")
		m, known := analytics.ChatTypes[name]
		var w float64
		if _, err := fmt.Sscan(weight, &w); !ok || !known || err != nil || w < 0 {
			return nil, nil, fmt.Errorf("invalid --chat-mix part %q: expected chatType=weight", part)
		}
		total += w
		metrics = append(metrics, m)
		cumulative = append(cumulative, total)
	}
	if total <= 0 {
		return nil, nil, fmt.Errorf("invalid --chat-mix %q: weights add up to 0", mix)
	}
	for i := range cumulative {
		cumulative[i] /= total
	}
	return metrics, cumulative, nil
}

// group is one generated group.
type group struct {
	id       string
	students int
}

func (s Scale) groups() []group {
	gs := []group{{"bench-main", s.Students}}
	for i := range s.OtherGroups {
		gs = append(gs, group{fmt.Sprintf("bench-other-%d", i+1), s.OtherSize})
	}
	return gs
}

func studentID(n int) string { return fmt.Sprintf("s%06d", n) }

// firstDay is the first day of the data: Days days ending yesterday (UTC).
func (s Scale) firstDay(now time.Time) analytics.Day {
	return analytics.DayOf(now, time.UTC) - analytics.Day(s.Days)
}

// generate produces a group's events in batches of up to batchSize, day by
// day, deterministically from the seed.
func (s Scale) generate(g group, now time.Time, batchSize int, emit func([]analytics.Event) error) (int, error) {
	metrics, weights, err := chatWeights(s.ChatMix)
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(s.Seed, uint64(len(g.id))*7919+uint64(g.students)))
	batch := make([]analytics.Event, 0, batchSize)
	n := 0
	first := s.firstDay(now)
	for day := first; day < first+analytics.Day(s.Days); day++ {
		start := day.Start(time.UTC)
		for st := range g.students {
			if rng.Float64() >= s.Active {
				continue
			}
			for range s.EventsPerDay {
				e := analytics.Event{GroupID: g.id, ID: fmt.Sprintf("e%010d", n), StudentID: studentID(st), Day: day,
					OccurredAt: start.Add(time.Duration(rng.IntN(86_400_000)) * time.Millisecond)}
				if rng.Float64() < s.SessionShare {
					e.Metric = analytics.SessionsCreated
				} else {
					r := rng.Float64()
					for i, w := range weights {
						if r < w || i == len(weights)-1 {
							e.Metric = metrics[i]
							break
						}
					}
				}
				n++
				batch = append(batch, e)
				if len(batch) == batchSize {
					if err := emit(batch); err != nil {
						return n, err
					}
					batch = batch[:0]
				}
			}
		}
	}
	if len(batch) > 0 {
		return n, emit(batch)
	}
	return n, nil
}
