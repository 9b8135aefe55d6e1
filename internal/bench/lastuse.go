package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

// LastUseResult is the list of who stopped (GET /api/last-use, JSON) of
// the main school and of a class of 30 of it: first, then p50 and p99 of
// Runs; and the baseline's query of the students' last days over the raw
// events, whose days the list must equal.
type LastUseResult struct {
	Students      int       `json:"students"`
	Runs          int       `json:"runs"`
	SchoolFirstMs float64   `json:"schoolFirstMs"`
	School        Latencies `json:"school"`
	Class         Latencies `json:"classOf30"`
	BaselineP50   float64   `json:"baselineP50Ms"`
	Bytes         int       `json:"bytes"`
}

// benchClassOf30 is the main school's class of its first 30 students.
const benchClassOf30 = "bench-30"

// measureLastUse times the lists and checks the school's against the
// baseline.
func measureLastUse(ctx context.Context, cfg Config, st *stores.Stores, srv *Server, key string, bl *baselines) (LastUseResult, error) {
	res := LastUseResult{Students: cfg.Scale.Students, Runs: max(cfg.Requests, 1)}
	class := analytics.Class{GroupID: "bench-main", ID: benchClassOf30, Name: "thirty"}
	for i := range min(30, cfg.Scale.Students) {
		class.Members = append(class.Members, studentID(i))
	}
	if _, err := platform.New(st.Directory, st.Usage).CreateClass(ctx, class); err != nil {
		return res, err
	}
	start := time.Now()
	body, err := getList(srv.Base, key, "")
	if err != nil {
		return res, err
	}
	res.SchoolFirstMs, res.Bytes = ms(time.Since(start)), len(body)
	for _, ask := range []struct {
		query string
		l     *Latencies
	}{{"", &res.School}, {"classId=" + benchClassOf30, &res.Class}} {
		var took []float64
		for range res.Runs {
			start := time.Now()
			if _, err := getList(srv.Base, key, ask.query); err != nil {
				return res, err
			}
			took = append(took, ms(time.Since(start)))
		}
		*ask.l = Latencies{percentile(took, 50), percentile(took, 99)}
	}
	b, err := bl.of("bench-main")
	if err != nil {
		return res, err
	}
	var want map[string][2]string
	var took []float64
	for range max(cfg.Baseline, 1) {
		start := time.Now()
		if want, err = b.lastDays("bench-main"); err != nil {
			return res, fmt.Errorf("baseline of the last days: %w", err)
		}
		took = append(took, ms(time.Since(start)))
	}
	res.BaselineP50 = percentile(took, 50)
	return res, sameLastDays(body, want)
}

// getList asks the main school's list of last use.
func getList(base, key, query string) ([]byte, error) {
	req, err := http.NewRequest("GET", base+"/api/last-use?"+query, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET /api/last-use?%s: status %d: %s", query, resp.StatusCode, body)
	}
	return body, err
}

// sameLastDays checks the list's last days against the baseline's, every
// student's.
func sameLastDays(body []byte, want map[string][2]string) error {
	var list struct {
		Students []struct {
			StudentID       string  `json:"studentId"`
			LastLiveLecture *string `json:"lastLiveLecture"`
			LastChat        *string `json:"lastChat"`
		} `json:"students"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return err
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, s := range list.Students {
		if got := [2]string{str(s.LastLiveLecture), str(s.LastChat)}; got != want[s.StudentID] {
			return fmt.Errorf("last use: student %s has last days %v, the baseline %v", s.StudentID, got, want[s.StudentID])
		}
	}
	return nil
}

// lastDays is the baseline of the list: each student's last day of live
// lectures (a session made, or a live lecture message) and of chat (any
// message), by one GROUP BY over the group's raw events; the group is in
// UTC. Students without events are absent.
func (b *baseline) lastDays(group string) (map[string][2]string, error) {
	rows, err := b.db.Query(b.q(fmt.Sprintf(`SELECT student_id,
		MAX(CASE WHEN metric IN (%d, %d) THEN occurred_at ELSE -1 END),
		MAX(CASE WHEN metric <> %d THEN occurred_at ELSE -1 END)
		FROM events WHERE group_id = ? GROUP BY student_id`,
		analytics.SessionsCreated, analytics.LiveLectureMessages, analytics.SessionsCreated)), group)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	day := func(ms int64) string {
		if ms < 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format(time.DateOnly)
	}
	last := map[string][2]string{}
	for rows.Next() {
		var id string
		var live, chat int64
		if err := rows.Scan(&id, &live, &chat); err != nil {
			return nil, err
		}
		last[id] = [2]string{day(live), day(chat)}
	}
	return last, rows.Err()
}

// print writes the lists' figures.
func (l *LastUseResult) print(w io.Writer) {
	fmt.Fprintf(w, "\nthe list of who stopped (GET /api/last-use, JSON, %d KB), first, then p50 and p99 of %d:\n", l.Bytes/1024, l.Runs)
	fmt.Fprintf(w, "  %-24s first %7.2f ms  p50 %7.2f ms  p99 %7.2f ms  (the baseline's GROUP BY over the raw events: p50 %.2f ms)\n",
		fmt.Sprintf("school of %d students", l.Students), l.SchoolFirstMs, l.School.P50, l.School.P99, l.BaselineP50)
	fmt.Fprintf(w, "  %-24s p50 %7.2f ms  p99 %7.2f ms\n", "class of 30", l.Class.P50, l.Class.P99)
}
