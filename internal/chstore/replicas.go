package chstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
)

// shard is one shard of the usage tier: one server, or its replicas.
//
// On a replicated shard every table is a Replicated*MergeTree that
// ZooKeeper keeps alike on each replica. Inserts go to one replica with
// insert_quorum=2, so that an acknowledged write is on two servers; reads
// use select_sequential_consistency, so that a replica that lacks an
// acknowledged write refuses rather than answers, and go on to the next
// replica when one refuses or is down.
type shard struct {
	name     string // its replicas' host:port joined by "|", as placements record it
	database string
	replicas []*replica
	// preferred is the replica that answered last: calls start there.
	preferred atomic.Int32
	// join, on a replicated shard, gives the schema to a replica that
	// answers without it (Store.joinReplicas); lastJoin is when it last
	// looked, in Unix nanoseconds.
	join     func()
	lastJoin atomic.Int64
}

// replica is one ClickHouse server of a shard.
type replica struct {
	addr string
	conn driver.Conn
	// caughtUpAt is when the replica was last found to have done every
	// deletion its peers have (shard.caughtUp), in Unix nanoseconds; 0
	// after a call on it found it unreachable.
	caughtUpAt atomic.Int64
}

// Error codes of ClickHouse's that say a replicated shard cannot take a
// write or give a consistent read now, though a later call may succeed.
const (
	codeReadonly              = 242 // the table lost ZooKeeper: read-only
	codeTooFewLiveReplicas    = 285
	codePreviousQuorumPending = 286 // one quorum insert per table at a time
	codeReplicaNotInQuorum    = 289 // this replica lacks an acknowledged write
	codeUnknownInsertStatus   = 319 // the quorum did not answer in time
	codeNoZooKeeper           = 225
	codeKeeperException       = 999
)

// notNow are the codes a write answers as unavailable (503): the shard
// may take it once its replicas and ZooKeeper are back.
var notNow = []int32{codeReadonly, codeTooFewLiveReplicas, codePreviousQuorumPending, codeReplicaNotInQuorum,
	codeUnknownInsertStatus, codeNoZooKeeper, codeKeeperException}

func exceptionCode(err error) int32 {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return ex.Code
	}
	return 0
}

// tryNext reports whether a call that failed with err may succeed on
// another replica of the shard.
func tryNext(err error) bool {
	return unreachable(err) || errors.Is(err, errBehind) || slices.Contains(notNow, exceptionCode(err))
}

// replicated reports whether the shard's tables are replicated.
func (sh *shard) replicated() bool { return len(sh.replicas) > 1 }

// each runs fn on the shard's replicas, the preferred first, until one
// succeeds or fails in a way another replica would not mend.
func (sh *shard) each(fn func(r *replica) error) error {
	first := int(sh.preferred.Load())
	var errs []error
	for i := range sh.replicas {
		n := (first + i) % len(sh.replicas)
		err := fn(sh.replicas[n])
		if err == nil {
			sh.preferred.Store(int32(n))
			return nil
		}
		if unreachable(err) {
			sh.replicas[n].caughtUpAt.Store(0) // it may come back behind
		}
		if !tryNext(err) || len(sh.replicas) == 1 {
			return err
		}
		errs = append(errs, fmt.Errorf("replica %s: %w", sh.replicas[n].addr, err))
	}
	return errors.Join(errs...)
}

// query runs a query on the first replica that answers it.
func (sh *shard) query(ctx context.Context, query string, args ...any) (rows driver.Rows, err error) {
	err = sh.read(ctx, func(ctx context.Context, r *replica) (err error) {
		rows, err = r.conn.Query(ctx, query, args...)
		return err
	})
	return rows, err
}

// eachRow runs a query as query does and calls fn with each row of its
// answer, until fn fails.
func (sh *shard) eachRow(ctx context.Context, query string, args []any, fn func(rows driver.Rows) error) error {
	rows, err := sh.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryRow runs a query of one row on the first replica that answers it.
func (sh *shard) queryRow(ctx context.Context, query string, args ...any) (row driver.Row) {
	sh.read(ctx, func(ctx context.Context, r *replica) error {
		row = r.conn.QueryRow(ctx, query, args...)
		return row.Err()
	})
	return row
}

// read runs a read on the first replica that answers it. A sequentially
// consistent read asks ZooKeeper which writes the quorum acknowledged;
// while no replica can reach ZooKeeper (or its tables are read-only,
// their session lost), read reads what the replica holds instead, so
// that reports go on. Nothing is written meanwhile
// (a replicated table without ZooKeeper is read-only), so the replica
// holds every acknowledged write, and at most the rows of a write whose
// client was told it failed, which a report may then show early: that
// write either reaches its quorum later or its client sends it again,
// and its events count once either way.
func (sh *shard) read(ctx context.Context, fn func(ctx context.Context, r *replica) error) error {
	readOn := func(ctx context.Context) func(r *replica) error {
		return func(r *replica) error {
			if err := sh.caughtUp(ctx, r); err != nil {
				return err
			}
			return fn(ctx, r)
		}
	}
	err := sh.each(readOn(ctx))
	if sh.replicated() && lostZooKeeper(err) {
		local := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"select_sequential_consistency": 0}))
		err = sh.each(readOn(local))
	}
	return err
}

// lostZooKeeper reports whether every replica that a read tried (each's
// joined errors) failed for want of ZooKeeper, or could not be reached:
// none answered that it lacks a write its peers have.
func lostZooKeeper(err error) bool {
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	some := false
	for _, err := range errs {
		switch {
		case slices.Contains([]int32{codeNoZooKeeper, codeKeeperException, codeReadonly}, exceptionCode(err)):
			some = true
		case !unreachable(err):
			return false
		}
	}
	return some
}

// errBehind is a replica that has not yet done a deletion its peers have.
var errBehind = errors.New("replica has not yet done a deletion that its peers have done")

// caughtUp fails with errBehind, on a replicated shard, when the replica
// has not done every deletion that a peer that answers has done. A
// deletion is done once a quorum of replicas has done it
// (Store.awaitMutations); a replica that was down meanwhile does it when
// it is back, and must not answer with what was deleted until then.
// select_sequential_consistency does the same for inserts, not for
// deletions. A replica is asked at most once a second, and again after a
// call found it unreachable (a replica that went down and came back fails
// the first call on the connections it had). A peer that does not answer
// within peerWait is passed by.
func (sh *shard) caughtUp(ctx context.Context, r *replica) error {
	if !sh.replicated() || time.Since(time.Unix(0, r.caughtUpAt.Load())) < time.Second {
		return nil
	}
	mine, err := sh.mutationsDone(ctx, r)
	if err != nil {
		return err
	}
	peerCtx, cancel := context.WithTimeout(ctx, peerWait)
	defer cancel()
	for _, peer := range sh.replicas {
		if peer == r {
			continue
		}
		theirs, err := sh.mutationsDone(peerCtx, peer)
		if err != nil {
			continue
		}
		for table, last := range theirs {
			if mine[table] < last {
				return fmt.Errorf("replica %s, table %s: %w", r.addr, table, errBehind)
			}
		}
	}
	r.caughtUpAt.Store(time.Now().UnixNano())
	return nil
}

// peerWait bounds how long caughtUp waits for a peer's answer.
const peerWait = 500 * time.Millisecond

// mutationsDone is the last deletion the replica has done of each of the
// store's tables, by its mutation id (ZooKeeper's sequential number, the
// same on every replica). A replica does a table's deletions in order.
func (sh *shard) mutationsDone(ctx context.Context, r *replica) (map[string]string, error) {
	rows, err := r.conn.Query(ctx, `SELECT table, max(mutation_id) FROM system.mutations
		WHERE database = ? AND is_done GROUP BY table`, sh.database)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := map[string]string{}
	for rows.Next() {
		var table, id string
		if err := rows.Scan(&table, &id); err != nil {
			return nil, err
		}
		done[table] = id
	}
	return done, rows.Err()
}

// exec runs a statement that ClickHouse replicates by itself (an ALTER …
// DELETE of a replicated table) on the first replica that takes it.
func (sh *shard) exec(ctx context.Context, stmt string, args ...any) error {
	return sh.each(func(r *replica) error { return r.conn.Exec(ctx, stmt, args...) })
}

// insert inserts the rows that fill appends, as one block (one part), on
// the first replica that takes it. On a replicated shard, ClickHouse
// 18.16 takes one quorum insert per table at a time and refuses the
// others: insert waits for its turn and sends the block again, as
// long as ctx lasts.
func (sh *shard) insert(ctx context.Context, stmt string, fill func(b driver.Batch) error) error {
	for wait := 2 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := sh.each(func(r *replica) error {
			batch, err := r.conn.PrepareBatch(ctx, stmt)
			if err != nil {
				return err
			}
			defer batch.Abort()
			if err := fill(batch); err != nil {
				return err
			}
			return batch.Send()
		})
		if exceptionCode(err) != codePreviousQuorumPending {
			sh.joinIfQuorumLost(err)
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			sh.joinIfQuorumLost(err)
			return errors.Join(err, ctx.Err())
		}
	}
}

// joinIfQuorumLost looks for a replica to join when an insert failed for
// want of its quorum: a lost replica's replacement may be up, empty.
func (sh *shard) joinIfQuorumLost(err error) {
	if sh.join != nil && slices.Contains([]int32{codeTooFewLiveReplicas, codePreviousQuorumPending, codeUnknownInsertStatus}, exceptionCode(err)) {
		sh.join()
	}
}

// joinInterval is how often at most a shard looks for a replica to join.
const joinInterval = 2 * time.Second

// joinReplicas migrates, in the background, each replica of sh that
// answers but has no tables, at most once every joinInterval: a server
// that replaces a lost replica joins its shard by itself (its new tables
// fetch their rows from its peers), and the quorum inserts that waited
// for it go on, with no operator running migrate.
func (s *Store) joinReplicas(sh *shard) {
	now, last := time.Now().UnixNano(), sh.lastJoin.Load()
	if now-last < int64(joinInterval) || !sh.lastJoin.CompareAndSwap(last, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, err := readMigrations(migrations)
		if err != nil {
			s.log.Error("joining replicas", "shard", sh.name, "err", err)
			return
		}
		for _, r := range sh.replicas {
			var exists uint8
			if err := r.conn.QueryRow(ctx, `EXISTS TABLE `+s.table("events")).Scan(&exists); err != nil || exists == 1 {
				continue
			}
			if _, err := s.migrateServer(ctx, s.log, r.alone(sh.name), true, list); err != nil {
				s.log.Warn("joining a replica", "shard", sh.name, "server", r.addr, "err", s.wrap("joinReplicas", err))
				continue
			}
			s.log.Info("replica joined its shard", "shard", sh.name, "server", r.addr)
		}
	}()
}

// onEvery runs fn on every replica of the shard: for what ClickHouse
// does not replicate (DDL, a database's drop) and for waiting until every
// replica has done a mutation.
func (sh *shard) onEvery(fn func(r *replica) error) error {
	for _, r := range sh.replicas {
		if err := fn(r); err != nil {
			if sh.replicated() {
				return fmt.Errorf("replica %s: %w", r.addr, err)
			}
			return err
		}
	}
	return nil
}

// alone is a shard of the one replica: for migrating a replica by itself.
func (r *replica) alone(name string) *shard { return &shard{name: name, replicas: []*replica{r}} }

// replicatedEngine rewrites a migration's CREATE TABLE … ENGINE =
// xMergeTree(args) into ReplicatedxMergeTree, its path in ZooKeeper
// naming the server's {shard} macro, the database and the table, its
// replica the server's {replica} macro.
func replicatedEngine(stmt, database string) string {
	m := createTable.FindStringSubmatch(stmt)
	if m == nil {
		return stmt
	}
	table, engine, args := m[1], m[2], m[3]
	params := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s', '{replica}'", database, table)
	if args != "" {
		params += ", " + args
	}
	loc := createTable.FindStringSubmatchIndex(stmt)
	return stmt[:loc[4]] + "Replicated" + engine + "(" + params + ")" + stmt[loc[1]:]
}

// createTable finds a CREATE TABLE's name and its MergeTree engine.
var createTable = regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS \S+\.(\w+)\b.*?ENGINE = (\w*MergeTree)\(([^)]*)\)`)

// splitReplicas returns the replicas a shard of the URL names.
func splitReplicas(name string) []string { return strings.Split(name, "|") }

// settleQuorums waits, on a replicated shard, until each quorum insert
// into the store's tables that is unsettled when it is called has
// settled: its part is on two replicas, or it is lost for good.
//
// A quorum insert that timed out (its writer told its client it failed)
// may still settle later and its rows appear, and until it settles,
// select_sequential_consistency hides them. A repair that read around
// them would clear the intent of a write whose events later appear,
// uncounted; numbering students around them could give two students one
// ordinal. Both wait here first. ClickHouse 18.16 runs one quorum insert
// per table at a time, so no other of the group's unsettled inserts can
// start meanwhile: the group's writer holds its lock.
func (s *Store) settleQuorums(ctx context.Context, sh *shard) error {
	if !sh.replicated() {
		return nil
	}
	pending := func() (map[string]string, error) {
		parts := map[string]string{} // table's path in ZooKeeper -> part
		rows, err := sh.query(ctx, `SELECT zookeeper_path FROM system.replicas WHERE database = ?`, s.database)
		if err != nil {
			return nil, err
		}
		var paths []string
		for rows.Next() {
			var p string
			if err := rows.Scan(&p); err != nil {
				rows.Close()
				return nil, err
			}
			paths = append(paths, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for _, p := range paths {
			var status string
			err := sh.queryRow(ctx, `SELECT value FROM system.zookeeper WHERE path = ? AND name = 'status'`, p+"/quorum").Scan(&status)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return nil, err
			}
			parts[p] = quorumPart(status)
		}
		return parts, nil
	}
	first, err := pending()
	if err != nil {
		return err
	}
	for wait, nudged := 5*time.Millisecond, time.Now(); len(first) > 0; wait = min(2*wait, 200*time.Millisecond) {
		if time.Since(nudged) > time.Second {
			nudged = time.Now()
			if err := s.nudgeQuorums(ctx, sh, first); err != nil {
				return err
			}
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("waiting for unsettled quorum inserts (%v): %w", first, ctx.Err())
		}
		now, err := pending()
		if err != nil {
			return err
		}
		// With too few replicas, a pending quorum waits for one to come
		// back or be replaced: say so now rather than when ctx ends.
		var active uint8
		if err := sh.queryRow(ctx, `SELECT min(active_replicas) FROM system.replicas WHERE database = ?`, s.database).Scan(&active); err != nil {
			return err
		}
		if active < insertQuorum {
			sh.join()
			return fmt.Errorf("shard %s has %d of %d replicas active, and a quorum insert waits for them: %w",
				sh.name, active, len(sh.replicas), analytics.ErrUnavailable)
		}
		for p, part := range first {
			if now[p] != part {
				delete(first, p)
			}
		}
	}
	return nil
}

// nudgeQuorums has each replica that holds a pending quorum's part, and
// is not among the replicas its quorum counts, count itself. A replica
// that joined after the part was written (a lost one's replacement)
// fetches it as an ordinary part, and ClickHouse 18.16 counts such a
// part for the quorum only when the replica's table restarts: restart it.
func (s *Store) nudgeQuorums(ctx context.Context, sh *shard, pending map[string]string) error {
	for zkPath, part := range pending {
		table := path.Base(zkPath)
		for _, r := range sh.replicas {
			var has uint64
			var name string
			err := r.conn.QueryRow(ctx, `SELECT (SELECT count() FROM system.parts WHERE database = ? AND table = ? AND name = ? AND active),
				replica_name FROM system.replicas WHERE database = ? AND table = ?`, s.database, table, part, s.database, table).Scan(&has, &name)
			if err != nil || has == 0 {
				continue // down, or yet to fetch the part: nothing to nudge
			}
			var status string
			if err := sh.queryRow(ctx, `SELECT value FROM system.zookeeper WHERE path = ? AND name = 'status'`, zkPath+"/quorum").Scan(&status); err != nil {
				continue // settled meanwhile
			}
			if slices.Contains(quorumReplicas(status), name) {
				continue
			}
			s.log.Info("restarting a replica's table to count its part for the quorum", "server", r.addr, "table", table, "part", part)
			if err := r.conn.Exec(ctx, `SYSTEM RESTART REPLICA `+s.table(table)); err != nil {
				return err
			}
		}
	}
	return nil
}

// quorumReplicas reads the replicas that hold a quorum's part from its
// status in ZooKeeper: the lines after "replicas:".
func quorumReplicas(status string) []string {
	_, list, _ := strings.Cut(status, "replicas:\n")
	return strings.Fields(list)
}

// quorumPart reads the part's name from a quorum's status in ZooKeeper.
func quorumPart(status string) string {
	for line := range strings.Lines(status) {
		if name, ok := strings.CutPrefix(line, "part_name: "); ok {
			return strings.TrimSpace(name)
		}
	}
	return status
}

// fence is the group id of the rows deleteRows inserts after a deletion
// on a replicated shard: no group has it (ids have no control
// characters), and no read asks for it.
const fence = "\x00fence"

// deleteRows deletes the table's rows that match where (a mutation: see
// awaitMutations). On a replicated shard ClickHouse 18.16 never mutates
// the part a quorum insert wrote last, so that a deletion would wait for
// the next write of the table; a fence row inserted with quorum after the
// deletion makes that part not the last. Each deletion deletes the fence
// of the one before.
func (s *Store) deleteRows(ctx context.Context, sh *shard, table, where string, args ...any) error {
	if !sh.replicated() {
		return sh.exec(ctx, `ALTER TABLE `+s.table(table)+` DELETE WHERE `+where, args...)
	}
	if err := sh.exec(ctx, `ALTER TABLE `+s.table(table)+` DELETE WHERE (`+where+`) OR group_id = ?`, append(args, fence)...); err != nil {
		return err
	}
	return sh.insert(undeduplicated(ctx), `INSERT INTO `+s.table(table)+` (group_id)`, func(b driver.Batch) error { return b.Append(fence) })
}

// undeduplicated is ctx for an insert that a replicated table must store
// even when an insert of the same rows is among its last hundred: a fence
// (the same row each time), rows copied back to a shard they left. Other
// inserts keep ClickHouse's deduplication, so that one sent again to the
// other replica after the first lost its connection counts once; their
// rows carry the write's number, so no two writes send the same block.
func undeduplicated(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_deduplicate": 0}))
}
