package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/writebehind"
)

// The write-behind log of a usage store on ClickHouse (package chstore):
// the events it has acknowledged and not yet written to ClickHouse, which
// takes them behind in large batches. An event is logged under its
// group's log lock (WithGroupsLogging), applied and unlogged under its
// apply lock (WithGroupsLock), and erased with its student or group under
// the write lock.

// LogTx is a transaction holding the log locks of several groups: their
// usage locks shared (see WithGroupsLock), which the log's other writers
// and its appliers share and a write of the group's usage (an erasure, a
// move, a change of zone) excludes.
type LogTx struct {
	s      *Store
	tx     *txn
	locked []string // in id order
	gone   []string // the groups asked for that do not exist
}

// Locked are the groups locked, in id order.
func (l *LogTx) Locked() []string { return l.locked }

// Gone are the groups asked for that do not exist.
func (l *LogTx) Gone() []string { return l.gone }

// WithGroupsLogging runs fn once in a transaction holding the log locks
// of those of the groups that no write holds (it does not wait for them),
// committed when fn returns nil; the groups not locked and not gone are
// busy.
func (s *Store) WithGroupsLogging(ctx context.Context, groupIDs []string, fn func(tx writebehind.LogLock) error) error {
	if s.marks == nil {
		return fmt.Errorf("WithGroupsLogging: a sharded usage store needs a PostgreSQL directory, not %s", s.dialect.name)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.wrap("WithGroupsLogging", s.transactOnce(ctx, txDefault, func(tx *txn) error {
		zones, gone, err := s.lockUsages(ctx, tx, groupIDs, logLocks)
		if err != nil {
			return fmt.Errorf("the locks: %w", err)
		}
		return fn(&LogTx{s: s, tx: tx, locked: slices.Sorted(maps.Keys(zones)), gone: gone})
	}))
}

// Pending reads a locked group's placement, zone and logged events in one
// statement, so that the three are of one moment: an apply that commits
// beside it moves the placement and empties the log together. The
// placement's intent, which can be as long as the log (an apply's lists
// its students), comes on the first row only.
func (l *LogTx) Pending(ctx context.Context, groupID string, limit int) (writebehind.Pending, error) {
	pending := writebehind.Pending{Placement: writebehind.Placement{GroupID: groupID}}
	rows, err := l.tx.QueryContext(ctx, `SELECT g.time_zone, p.shard, p.seq,
			CASE WHEN coalesce(e.n, 1) = 1 THEN p.intent END, p.epoch,
			e.event_id, e.student_id, e.student_name, e.occurred_at, e.metric
		FROM groups g LEFT JOIN usage_placements p ON p.group_id = g.group_id
		LEFT JOIN LATERAL (SELECT event_id, student_id, student_name, occurred_at, metric,
				row_number() OVER (ORDER BY id) AS n
			FROM usage_log WHERE group_id = g.group_id ORDER BY id LIMIT $2) e ON true
		WHERE g.group_id = $1 ORDER BY e.n`, groupID, limit)
	if err != nil {
		return pending, err
	}
	defer rows.Close()
	for rows.Next() {
		var shard, intent, id, student, name sql.NullString
		var seq, epoch, occurred sql.NullInt64
		var metric sql.NullInt16
		if err := rows.Scan(&pending.Zone, &shard, &seq, &intent, &epoch, &id, &student, &name, &occurred, &metric); err != nil {
			return pending, err
		}
		pending.Placed = shard.Valid
		pending.Placement.Shard, pending.Placement.Seq, pending.Placement.Epoch = shard.String, seq.Int64, epoch.Int64
		if intent.Valid {
			pending.Placement.Intent = []byte(intent.String)
		}
		if id.Valid {
			pending.Events = append(pending.Events, analytics.Event{GroupID: groupID, ID: id.String, StudentID: student.String,
				StudentName: name.String, OccurredAt: time.UnixMilli(occurred.Int64).UTC(), Metric: analytics.Metric(metric.Int16)})
		}
	}
	return pending, rows.Err()
}

// SaveStudents enrols and names students of the locked groups.
func (l *LogTx) SaveStudents(ctx context.Context, updates map[string][]analytics.StudentUpdate) error {
	return l.s.saveStudents(ctx, l.tx, updates, nil, nil)
}

// Log adds the events, of the locked groups, to the log at time at, in
// their order, and returns those it added: an event whose id the log
// holds for its group already (or the same call holds earlier) is left
// out.
func (l *LogTx) Log(ctx context.Context, events []analytics.Event, at time.Time) (map[string]map[string]bool, error) {
	n := len(events)
	groups, ids, students, names := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	occurred, metrics := make([]int64, n), make([]int16, n)
	for i, e := range events {
		groups[i], ids[i], students[i], names[i] = e.GroupID, e.ID, e.StudentID, e.StudentName
		occurred[i], metrics[i] = e.OccurredAt.UnixMilli(), int16(e.Metric)
	}
	// The rows are numbered in the events' order (the order the applier
	// applies them in, which names a student last), and inserted in the
	// order of their keys: two processes logging the same ids wait for
	// each other in one order, never in a circle.
	rows, err := l.tx.QueryContext(ctx, `WITH v AS MATERIALIZED (
			SELECT nextval(pg_get_serial_sequence('usage_log', 'id')) AS id, g, e, s, n, o, m
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::smallint[])
				WITH ORDINALITY AS u(g, e, s, n, o, m, i) ORDER BY i)
		INSERT INTO usage_log (id, group_id, event_id, student_id, student_name, occurred_at, metric, logged_at)
		SELECT id, g, e, s, n, o, m, $7 FROM v ORDER BY g, e
		ON CONFLICT (group_id, event_id) DO NOTHING RETURNING group_id, event_id`,
		groups, ids, students, names, occurred, metrics, at.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	added := map[string]map[string]bool{}
	for rows.Next() {
		var g, id string
		if err := rows.Scan(&g, &id); err != nil {
			return nil, err
		}
		if added[g] == nil {
			added[g] = map[string]bool{}
		}
		added[g][id] = true
	}
	return added, rows.Err()
}

// Placements reads the locked groups' placements: those that have one.
func (l *LogTx) Placements(ctx context.Context) (map[string]writebehind.Placement, error) {
	return placementsOf(ctx, l.tx, l.locked)
}

// Unlog takes out of the log the events of these ids (by group) that the
// transaction added.
func (l *LogTx) Unlog(ctx context.Context, ids map[string][]string) error {
	var groups, events []string
	for g, list := range ids {
		for _, id := range list {
			groups, events = append(groups, g), append(events, id)
		}
	}
	if len(events) == 0 {
		return nil
	}
	_, err := l.tx.ExecContext(ctx, `DELETE FROM usage_log AS l USING unnest($1::text[], $2::text[]) AS v(g, e)
		WHERE l.group_id = v.g AND l.event_id = v.e`, groups, events)
	return err
}

// Logged reads the log's events of the locked groups, up to limit in all,
// oldest first, for Unlog once they are applied.
func (g *GroupsTx) Logged(ctx context.Context, limit int) (map[string][]analytics.Event, error) {
	rows, err := g.tx.QueryContext(ctx, `SELECT id, group_id, event_id, student_id, student_name, occurred_at, metric
		FROM usage_log WHERE group_id = ANY($1) ORDER BY id LIMIT $2`, g.lockedIDs(), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := map[string][]analytics.Event{}
	g.logged = map[string][]int64{}
	for rows.Next() {
		var row int64
		var e analytics.Event
		var occurred int64
		var metric int16
		if err := rows.Scan(&row, &e.GroupID, &e.ID, &e.StudentID, &e.StudentName, &occurred, &metric); err != nil {
			return nil, err
		}
		e.OccurredAt, e.Metric = time.UnixMilli(occurred).UTC(), analytics.Metric(metric)
		events[e.GroupID] = append(events[e.GroupID], e)
		g.logged[e.GroupID] = append(g.logged[e.GroupID], row)
	}
	return events, rows.Err()
}

// Unlog takes the events Logged read of these groups out of the log, with
// the transaction.
func (g *GroupsTx) Unlog(ctx context.Context, groupIDs []string) error {
	var rows []int64
	for _, id := range groupIDs {
		rows = append(rows, g.logged[id]...)
	}
	if len(rows) == 0 {
		return nil
	}
	_, err := g.tx.ExecContext(ctx, `DELETE FROM usage_log WHERE id = ANY($1)`, rows)
	return err
}

// LoggedGroups returns the groups that have events in the log, those
// waiting longest first, up to limit.
func (s *Store) LoggedGroups(ctx context.Context, limit int) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT group_id FROM usage_log GROUP BY group_id ORDER BY min(id) LIMIT $1`, limit)
	if err != nil {
		return nil, s.wrap("LoggedGroups", err)
	}
	groups, err := scanStrings(rows)
	return groups, s.wrap("LoggedGroups", err)
}

// LoggedPlacement reports whether the group has events in the log and,
// read at the same moment, its placement (placed is false when it has
// none).
func (s *Store) LoggedPlacement(ctx context.Context, groupID string) (logged bool, p writebehind.Placement, placed bool, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	p.GroupID = groupID
	var shard, intent sql.NullString
	var seq, epoch sql.NullInt64
	err = s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM usage_log WHERE group_id = $1), p.shard, p.seq, p.intent, p.epoch
		FROM (SELECT 1 AS one) AS probe LEFT JOIN usage_placements p ON p.group_id = $1`, groupID).
		Scan(&logged, &shard, &seq, &intent, &epoch)
	if err != nil {
		return false, writebehind.Placement{}, false, s.wrap("LoggedPlacement", err)
	}
	p.Shard, p.Seq, p.Epoch = shard.String, seq.Int64, epoch.Int64
	if intent.Valid {
		p.Intent = []byte(intent.String)
	}
	return logged, p, shard.Valid, nil
}

// LoggedPlacements is LoggedPlacement of several groups in one query: the
// groups of them with events in the log, and the placements of those
// that have one.
func (s *Store) LoggedPlacements(ctx context.Context, groupIDs []string) (logged []string, placements []writebehind.Placement, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT g.id, EXISTS (SELECT 1 FROM usage_log l WHERE l.group_id = g.id), p.shard, p.seq, p.intent, p.epoch
		FROM unnest(CAST($1 AS text[])) AS g (id) LEFT JOIN usage_placements p ON p.group_id = g.id`, groupIDs)
	if err != nil {
		return nil, nil, s.wrap("LoggedPlacements", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p writebehind.Placement
		var inLog bool
		var shard, intent sql.NullString
		var seq, epoch sql.NullInt64
		if err := rows.Scan(&p.GroupID, &inLog, &shard, &seq, &intent, &epoch); err != nil {
			return nil, nil, s.wrap("LoggedPlacements", err)
		}
		if inLog {
			logged = append(logged, p.GroupID)
		}
		if shard.Valid {
			p.Shard, p.Seq, p.Epoch = shard.String, seq.Int64, epoch.Int64
			if intent.Valid {
				p.Intent = []byte(intent.String)
			}
			placements = append(placements, p)
		}
	}
	return logged, placements, s.wrap("LoggedPlacements", rows.Err())
}

// leadLockKey is the session advisory lock held by the process that
// leads the log's appliers.
const leadLockKey = 0x67616c6c

// LeadApplier reports whether this process leads the log's appliers,
// trying to become the leader when no process is: the leader holds a
// session lock on a connection of its own, which it loses only with the
// connection (the process's end, or the server's). One process applies
// the log in the background, so that the state each keeps of a group's
// rows stays current; another applies only what its reads settle. The
// apply locks keep it exact either way.
func (s *Store) LeadApplier(ctx context.Context) (bool, error) {
	if s.pool == nil {
		return false, fmt.Errorf("LeadApplier: a sharded usage store needs a PostgreSQL directory, not %s", s.dialect.name)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.lead != nil && s.lead.Ping(ctx) != nil {
		s.lead.Close(context.Background())
		s.lead, s.leading = nil, false
	}
	if s.leading {
		return true, nil
	}
	if s.lead == nil {
		conn, err := s.connect(ctx)
		if err != nil {
			return false, s.wrap("LeadApplier", err)
		}
		s.lead = conn
	}
	err := s.lead.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, leadLockKey).Scan(&s.leading)
	return s.leading, s.wrap("LeadApplier", err)
}

// closeLead ends the leader's connection, and with it its lead.
func (s *Store) closeLead() error {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.lead == nil {
		return nil
	}
	err := s.lead.Close(context.Background())
	s.lead, s.leading = nil, false
	return err
}

// VacuumLog vacuums the log's table, on a connection of its own, unless
// a vacuum of it runs already. The log is a queue: each event is deleted
// once applied, so its table holds mostly dead rows, which every read of
// it walks past until a vacuum clears them, and autovacuum may be off or
// late: a process of chstore calls it after every so many events it applied.
func (s *Store) VacuumLog(ctx context.Context) error {
	if s.pool == nil {
		return fmt.Errorf("VacuumLog: a sharded usage store needs a PostgreSQL directory, not %s", s.dialect.name)
	}
	conn, err := s.connect(ctx)
	if err != nil {
		return s.wrap("VacuumLog", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, `VACUUM (SKIP_LOCKED) usage_log`)
	return s.wrap("VacuumLog", err)
}

// LogStats returns how many events the log holds and when the oldest of
// them was logged (zero when none is).
func (s *Store) LogStats(ctx context.Context) (events int, oldest time.Time, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var first sql.NullInt64
	if err := s.read.QueryRowContext(ctx, `SELECT count(*), min(logged_at) FROM usage_log`).Scan(&events, &first); err != nil {
		return 0, time.Time{}, s.wrap("LogStats", err)
	}
	if first.Valid {
		oldest = time.UnixMilli(first.Int64)
	}
	return events, oldest, nil
}
