package sqlstore

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/cache"
	"groupanalytics/internal/rollup"
)

// A process keeps groups' rollup rows (days, weeks, months) under the
// group's creation and usage version, which every write of them moves in
// any process; GroupsRollups takes a group's rows from there while they
// are current, since reading a district's thousands of rows through the
// driver is too slow for its first answer (BENCHMARKS.md). A serving
// process loads the districts' schools written most at its start
// (Start). A group that GroupsRollups had to read from the database is
// loaded in the background, a batch at a time, resting between batches
// so that loading never takes more than a fifth of a core from writers.

// maxKeptRows bounds the bytes of the rows kept: 1,000 schools of 150
// students over 90 days take about 6.6 MB, over a year about 27.
const maxKeptRows = 32 << 20

// warmRowsShare is the share of maxKeptRows that the start's load fills
// at most, the rest left for the groups that reads ask for.
const warmRowsShare = 0.75

// keptRowsBatch is how many groups one load reads at most.
const keptRowsBatch = 250

// keptRows are the rows kept, and the groups waiting to be loaded.
type keptRows struct {
	rows *cache.Versioned[*rollup.Packed] // by group, under rowsVersions' version

	mu    sync.Mutex
	asked map[string]bool // groups a read asked for, to load
	warm  []string        // groups to load at a start, the first first
	// districts: the districts' schools are to be kept (keepDistricts),
	// at a start.
	districts bool
	wake      chan struct{} // a load waits
	started   bool          // the loader runs
	stop      context.CancelFunc
	done      sync.WaitGroup
}

func newKeptRows() *keptRows {
	return &keptRows{rows: cache.New[*rollup.Packed](maxKeptRows), asked: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// Start loads, in the background, every district's schools and plans
// (keptDistricts), and the rows of the districts' schools written most
// until they fill warmRowsShare of what is kept: a serving process calls it, so that
// its first answers of districts find them.
func (s *Store) Start() {
	ids, err := s.groupsWrittenMost(context.Background())
	if err != nil {
		s.log.Warn("rollup rows not loaded at start", "err", err)
		return
	}
	s.kept.mu.Lock()
	s.kept.districts = true
	s.kept.mu.Unlock()
	s.loadLater(ids, true)
}

// keepDistricts reads and keeps every district's schools and their plans,
// as a district key's first request would.
func (s *Store) keepDistricts(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT d.district_id, COALESCE(v.version, 0) FROM districts d
		LEFT JOIN district_versions v ON v.district_id = d.district_id`)
	if err != nil {
		return s.wrap("keepDistricts", err)
	}
	versions := map[string]int64{}
	for rows.Next() {
		var id string
		var version int64
		if err := rows.Scan(&id, &version); err != nil {
			rows.Close()
			return s.wrap("keepDistricts", err)
		}
		versions[id] = version
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return s.wrap("keepDistricts", err)
	}
	for id, version := range versions {
		if _, err := s.districtSchools(ctx, analytics.District{ID: id}, version, time.Now()); err != nil {
			return s.wrap("keepDistricts", err)
		}
	}
	return nil
}

// groupsWrittenMost returns the groups in a district with rollups, the
// most written first: only districts' answers read GroupsRollups.
func (s *Store) groupsWrittenMost(ctx context.Context) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT v.group_id FROM usage_versions v JOIN groups g ON g.group_id = v.group_id
		WHERE g.district_id IS NOT NULL ORDER BY v.version DESC, v.group_id`)
	if err != nil {
		return nil, s.wrap("groupsWrittenMost", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.wrap("groupsWrittenMost", err)
		}
		ids = append(ids, id)
	}
	return ids, s.wrap("groupsWrittenMost", rows.Err())
}

// loadLater queues the groups' rows to be loaded, at a start (warm) or
// as a read asked, starting the loader when none runs.
func (s *Store) loadLater(ids []string, warm bool) {
	k := s.kept
	if len(ids) == 0 && !warm {
		return
	}
	s.mu.RLock() // Close waits for it, and then no loader starts
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if warm {
		k.warm = append(k.warm, ids...)
	} else {
		for _, id := range ids {
			k.asked[id] = true
		}
	}
	if !k.started {
		k.started = true
		var ctx context.Context
		ctx, k.stop = context.WithCancel(context.Background())
		k.done.Add(1)
		go s.loadRows(ctx)
	}
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// nextBatch takes the next groups to load: those reads asked for, then
// those of the start while what is kept is under warmRowsShare. warmed
// says that the start's are done: loaded, or left for want of room.
func (k *keptRows) nextBatch() (batch []string, warmed bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	batch = make([]string, 0, keptRowsBatch)
	for id := range k.asked {
		if len(batch) == keptRowsBatch {
			return batch, false
		}
		batch = append(batch, id)
		delete(k.asked, id)
	}
	if k.warm == nil {
		return batch, false
	}
	if k.rows.Cost() >= int(warmRowsShare*maxKeptRows) {
		k.warm = k.warm[:0]
	}
	n := min(len(k.warm), keptRowsBatch-len(batch))
	batch, k.warm = append(batch, k.warm[:n]...), k.warm[n:]
	if len(k.warm) == 0 {
		k.warm = nil
		return batch, true
	}
	return batch, false
}

// loadRows loads the waiting groups' rows, a batch at a time, until ctx
// ends.
func (s *Store) loadRows(ctx context.Context) {
	k := s.kept
	defer k.done.Done()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.wake:
		}
		k.mu.Lock()
		districts := k.districts
		k.districts = false
		k.mu.Unlock()
		if districts {
			if err := s.keepDistricts(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("districts' schools not kept at start", "err", err)
			}
		}
		for ctx.Err() == nil {
			batch, warmed := k.nextBatch()
			if len(batch) == 0 {
				break
			}
			began := time.Now()
			if err := s.loadGroupRows(ctx, batch); err != nil && ctx.Err() == nil {
				s.log.Warn("rollup rows not loaded", "groups", len(batch), "err", err)
			}
			if warmed {
				s.log.Info("rollup rows loaded", "bytes", k.rows.Cost(), "duration", time.Since(start))
			}
			// Four times the load's time at rest: a fifth of a core.
			select {
			case <-ctx.Done():
			case <-time.After(4 * time.Since(began)):
			}
		}
	}
}

// loadGroupRows reads the groups' rows and keeps them under the versions
// read before them: rows newer than their version are only read again.
func (s *Store) loadGroupRows(ctx context.Context, ids []string) error {
	versions, err := s.rowsVersions(ctx, ids)
	if err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	in, args := inList(s.dialect, ids, "text")
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT group_id, span, period, `+metricList+`,
		live_lecture_users, chat_users FROM group_rollups WHERE group_id `+in+` AND span IN (?, ?, ?)`),
		append(args, int(rollup.PackedSpans[0]), int(rollup.PackedSpans[1]), int(rollup.PackedSpans[2]))...)
	if err != nil {
		return s.wrap("loadGroupRows", err)
	}
	defer rows.Close()
	loaded := map[string]*[len(rollup.PackedSpans)][]analytics.GroupRollup{}
	for rows.Next() {
		var r analytics.GroupRollup
		var groupID string
		var span analytics.Span
		if err := scanGroupRollup(rows, &r, &groupID, &span, &r.Key); err != nil {
			return s.wrap("loadGroupRows", err)
		}
		g := loaded[groupID]
		if g == nil {
			g = &[len(rollup.PackedSpans)][]analytics.GroupRollup{}
			loaded[groupID] = g
		}
		i := slices.Index(rollup.PackedSpans[:], span)
		g[i] = append(g[i], r)
	}
	if err := rows.Err(); err != nil {
		return s.wrap("loadGroupRows", err)
	}
	for _, id := range ids {
		v, ok := versions[id]
		if !ok {
			continue // gone
		}
		g := &rollup.Packed{}
		cost := 64
		if spans := loaded[id]; spans != nil {
			for i, rows := range spans {
				cost += g.Pack(i, rows)
			}
		}
		s.kept.rows.Put(id, v, g, cost)
	}
	return nil
}

// rowsVersions reads the version under which each group's rows are kept,
// by group (keptVersion). A group that does not exist has none.
func (s *Store) rowsVersions(ctx context.Context, ids []string) (map[string]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	in, args := inList(s.dialect, ids, "text")
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT g.group_id, g.created_at, COALESCE(v.version, 0)
		FROM groups g LEFT JOIN usage_versions v ON v.group_id = g.group_id WHERE g.group_id `+in), args...)
	if err != nil {
		return nil, s.wrap("rowsVersions", err)
	}
	defer rows.Close()
	versions := make(map[string]string, len(ids))
	for rows.Next() {
		var id string
		var created, version int64
		if err := rows.Scan(&id, &created, &version); err != nil {
			return nil, s.wrap("rowsVersions", err)
		}
		versions[id] = keptVersion(created, strconv.FormatInt(version, 10))
	}
	return versions, s.wrap("rowsVersions", rows.Err())
}

// keptVersion is the version a group's rows are kept under: its creation
// (milliseconds), and its usage version (UsageVersions), for a count of
// the group's writes starts again when a group is made again under its
// id.
func keptVersion(created int64, version string) string {
	return strconv.FormatInt(created, 10) + "." + version
}

// stopLoads ends the loader, and waits for it.
func (k *keptRows) stopLoads() {
	k.mu.Lock()
	stop := k.stop
	k.mu.Unlock()
	if stop != nil {
		stop()
	}
	k.done.Wait()
}
