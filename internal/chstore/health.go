package chstore

import (
	"context"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
)

// healthQuery asks a server how its replicated tables and deletions
// stand. It reads only what the server holds itself (no column of
// system.replicas that asks ZooKeeper), so that it answers while
// ZooKeeper is down; on a shard that is not replicated the first three
// figures are zero.
const healthQuery = `SELECT
	(SELECT count() FROM system.replicas WHERE database = ? AND is_readonly),
	(SELECT max(absolute_delay) FROM system.replicas WHERE database = ?),
	(SELECT sum(queue_size) FROM system.replicas WHERE database = ?),
	(SELECT count() FROM system.mutations WHERE database = ? AND NOT is_done),
	(SELECT if(count() = 0, 0, toUInt64(now() - min(create_time))) FROM system.mutations WHERE database = ? AND NOT is_done)`

// Health asks every server of the tier, all at once, how it stands. A
// server that does not answer within ctx is down.
func (s *Store) Health(ctx context.Context) []analytics.ReplicaHealth {
	var all []analytics.ReplicaHealth
	var replicas []*replica
	for _, sh := range s.shards {
		for _, r := range sh.replicas {
			all = append(all, analytics.ReplicaHealth{Shard: sh.name, Replica: r.addr})
			replicas = append(replicas, r)
		}
	}
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Go(func() { replicaHealth(ctx, s.database, r, &all[i]) })
	}
	wg.Wait()
	return all
}

// replicaHealth fills h with what the replica answers, if it does.
func replicaHealth(ctx context.Context, database string, r *replica, h *analytics.ReplicaHealth) {
	var readonly, delay, queue, deletions, oldest uint64
	err := r.conn.QueryRow(ctx, healthQuery, database, database, database, database, database).
		Scan(&readonly, &delay, &queue, &deletions, &oldest)
	if err != nil {
		return
	}
	h.Up, h.ReadonlyTables, h.Queue, h.Deletions = true, int(readonly), int(queue), int(deletions)
	h.Delay, h.OldestDeletion = time.Duration(delay)*time.Second, time.Duration(oldest)*time.Second
}
