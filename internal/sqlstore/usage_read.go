package sqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// GroupRollups returns the group's rollups of seg, ascending by period.
func (s *Store) GroupRollups(ctx context.Context, groupID string, seg analytics.Segment) ([]analytics.GroupRollup, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT period, `+metricList+`, live_lecture_users, chat_users
		FROM group_rollups WHERE group_id = ? AND span = ? AND period BETWEEN ? AND ? ORDER BY period`),
		groupID, int(seg.Span), int(seg.Keys.First), int(seg.Keys.Last))
	if err != nil {
		return nil, s.wrap("GroupRollups", err)
	}
	defer rows.Close()
	var rollups []analytics.GroupRollup
	for rows.Next() {
		var r analytics.GroupRollup
		if err := scanGroupRollup(rows, &r, &r.Key); err != nil {
			return nil, s.wrap("GroupRollups", err)
		}
		rollups = append(rollups, r)
	}
	return rollups, s.wrap("GroupRollups", rows.Err())
}

// GroupsRollups passes the rows of the groups kept under their creation
// and version from those kept (usage_kept.go), and reads the others'
// together, loading them later.
func (s *Store) GroupsRollups(ctx context.Context, groups []analytics.Group, versions []string, segs []analytics.Segment, each func(group, seg int, r *analytics.GroupRollup)) error {
	if len(groups) == 0 || len(segs) == 0 {
		return nil
	}
	var unkept []int
	var row analytics.GroupRollup
	for i, g := range groups {
		kept, ok := s.kept.rows.Get(g.ID, keptVersion(g.Created.UnixMilli(), versions[i]))
		if !ok || versions[i] == "" || !kept.Each(segs, &row, func(seg int) { each(i, seg, &row) }) {
			unkept = append(unkept, i)
		}
	}
	if len(unkept) == 0 {
		return nil
	}
	ids := make([]string, len(unkept))
	for j, i := range unkept {
		ids[j] = groups[i].ID
	}
	s.loadLater(ids, false)
	rollups, err := s.readGroupsRollups(ctx, ids, segs)
	if err != nil {
		return err
	}
	for _, i := range unkept {
		for seg := range segs {
			rows := rollups[seg][groups[i].ID]
			for j := range rows {
				each(i, seg, &rows[j])
			}
		}
	}
	return nil
}

// readGroupsRollups reads the rollups of every segment of several groups
// in one query, a branch of a UNION ALL a segment: rollups[i] holds
// segs[i]'s, each group's under its id. A first answer of a district then
// prepares and plans one statement, not one a segment on connections of
// its own. The ids are bound once, as the table asked.
func (s *Store) readGroupsRollups(ctx context.Context, groupIDs []string, segs []analytics.Segment) ([]map[string][]analytics.GroupRollup, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rollups := make([]map[string][]analytics.GroupRollup, len(segs))
	for i := range rollups {
		rollups[i] = make(map[string][]analytics.GroupRollup, len(groupIDs))
	}
	asked, args := valuesOf(s.dialect, groupIDs, "text")
	branches := make([]string, len(segs))
	for i, seg := range segs {
		branches[i] = `SELECT ` + strconv.Itoa(i) + `, group_id, period, ` + metricList + `, live_lecture_users, chat_users
		FROM group_rollups WHERE group_id IN (SELECT id FROM asked) AND span = ? AND period BETWEEN ? AND ?`
		args = append(args, int(seg.Span), int(seg.Keys.First), int(seg.Keys.Last))
	}
	rows, err := s.read.QueryContext(ctx, s.q(`WITH asked (id) AS (`+asked+`) `+strings.Join(branches, " UNION ALL ")), args...)
	if err != nil {
		return nil, s.wrap("GroupsRollups", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r analytics.GroupRollup
		var seg int
		var groupID string
		if err := scanGroupRollup(rows, &r, &seg, &groupID, &r.Key); err != nil {
			return nil, s.wrap("GroupsRollups", err)
		}
		rollups[seg][groupID] = append(rollups[seg][groupID], r)
	}
	return rollups, s.wrap("GroupsRollups", rows.Err())
}

// UsageVersions reads the count of writes of each group's rollups that
// the triggers of usage_versions keep: 0 for a group never written.
func (s *Store) UsageVersions(ctx context.Context, groupIDs []string) ([]string, error) {
	versions := make([]string, len(groupIDs))
	if len(groupIDs) == 0 {
		return versions, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	in, args := inList(s.dialect, groupIDs, "text")
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT group_id, version FROM usage_versions WHERE group_id `+in), args...)
	if err != nil {
		return nil, s.wrap("UsageVersions", err)
	}
	defer rows.Close()
	found := make(map[string]int64, len(groupIDs))
	for rows.Next() {
		var groupID string
		var version int64
		if err := rows.Scan(&groupID, &version); err != nil {
			return nil, s.wrap("UsageVersions", err)
		}
		found[groupID] = version
	}
	for i, id := range groupIDs {
		versions[i] = strconv.FormatInt(found[id], 10)
	}
	return versions, s.wrap("UsageVersions", rows.Err())
}

// scanGroupRollup reads a row of the lead columns, then the counts and
// the two student sets of a group rollup, into lead and r.
func scanGroupRollup(rows *sql.Rows, r *analytics.GroupRollup, lead ...any) error {
	// Decoded at once, so the driver's bytes need not be copied first.
	var ll, chat sql.RawBytes
	if err := rows.Scan(append(rollup.ScanDest(&r.Counts, lead...), &ll, &chat)...); err != nil {
		return err
	}
	r.LiveLectureUsers, r.ChatUsers = rollup.DecodeSet(ll), rollup.DecodeSet(chat)
	return nil
}

// StudentEvents returns the student's events in the group, oldest first.
// Events are kept by group and id: the group's are read, the student's
// kept, as erasure does.
func (s *Store) StudentEvents(ctx context.Context, groupID, studentID string) ([]analytics.Event, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT event_id, occurred_at, metric FROM events
		WHERE group_id = ? AND student_id = ? ORDER BY occurred_at, event_id`), groupID, studentID)
	if err != nil {
		return nil, s.wrap("StudentEvents", err)
	}
	defer rows.Close()
	var events []analytics.Event
	for rows.Next() {
		e := analytics.Event{GroupID: groupID, StudentID: studentID}
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Metric); err != nil {
			return nil, s.wrap("StudentEvents", err)
		}
		e.OccurredAt = fromMillis(at)
		events = append(events, e)
	}
	return events, s.wrap("StudentEvents", rows.Err())
}
