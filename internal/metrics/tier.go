package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"groupanalytics/internal/analytics"
)

// probeTimeout bounds a scrape's probe of the stores, well inside
// Prometheus's default scrape timeout (10 s): a server that has not
// answered by then is down.
const probeTimeout = 5 * time.Second

// Tier publishes, at each scrape, what probe tells of the directory's
// database and of every ClickHouse server of the usage tier: ClickHouse
// 18.16 serves no metrics of its own, so the service asks its system
// tables.
func (m *Metrics) Tier(probe func(context.Context) (analytics.DirectoryHealth, []analytics.ReplicaHealth)) {
	if m == nil {
		return
	}
	m.registry.MustRegister(tierCollector{probe})
}

var (
	replicaLabels = []string{"shard", "replica"}
	directoryUp   = prometheus.NewDesc("groupanalytics_directory_up",
		"1 when the directory's database answered the scrape's probe, else 0.", nil, nil)
	directorySynchronous = prometheus.NewDesc("groupanalytics_directory_synchronous",
		"PostgreSQL: 1 when the directory's commits wait for a standby (synchronous_standby_names is set).", nil, nil)
	directoryStandbys = prometheus.NewDesc("groupanalytics_directory_standbys",
		"PostgreSQL: standbys streaming from the directory's primary (seen with the pg_monitor role).", nil, nil)
	directoryLag = prometheus.NewDesc("groupanalytics_directory_replay_lag_seconds",
		"PostgreSQL: how far the standby furthest behind lags the primary in replay.", nil, nil)
	replicaUp = prometheus.NewDesc("groupanalytics_clickhouse_up",
		"1 when the ClickHouse server answered the scrape's probe, else 0; its other series are absent then.", replicaLabels, nil)
	replicaReadonly = prometheus.NewDesc("groupanalytics_clickhouse_readonly_tables",
		"Replicated tables of the server that lost ZooKeeper and take no writes.", replicaLabels, nil)
	replicaDelay = prometheus.NewDesc("groupanalytics_clickhouse_replication_delay_seconds",
		"How far the server's most behind table lags its shard's newest write.", replicaLabels, nil)
	replicaQueue = prometheus.NewDesc("groupanalytics_clickhouse_replication_queue",
		"Replication tasks waiting on the server.", replicaLabels, nil)
	replicaDeletions = prometheus.NewDesc("groupanalytics_clickhouse_deletions_pending",
		"Deletions (mutations) the server has not done yet.", replicaLabels, nil)
	replicaOldestDeletion = prometheus.NewDesc("groupanalytics_clickhouse_oldest_deletion_age_seconds",
		"How long the oldest deletion the server has not done has waited; 0 when none waits.", replicaLabels, nil)
)

// tierCollector asks the stores how they stand at each scrape.
type tierCollector struct {
	probe func(context.Context) (analytics.DirectoryHealth, []analytics.ReplicaHealth)
}

func (tierCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{directoryUp, directorySynchronous, directoryStandbys, directoryLag,
		replicaUp, replicaReadonly, replicaDelay, replicaQueue, replicaDeletions, replicaOldestDeletion} {
		ch <- d
	}
}

func (c tierCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	directory, replicas := c.probe(ctx)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(directoryUp, one(directory.Up))
	if directory.Up && directory.Replicated {
		gauge(directorySynchronous, one(directory.Synchronous))
		gauge(directoryStandbys, float64(directory.Standbys))
		gauge(directoryLag, directory.ReplayLag.Seconds())
	}
	for _, r := range replicas {
		gauge(replicaUp, one(r.Up), r.Shard, r.Replica)
		if !r.Up {
			continue
		}
		gauge(replicaReadonly, float64(r.ReadonlyTables), r.Shard, r.Replica)
		gauge(replicaDelay, r.Delay.Seconds(), r.Shard, r.Replica)
		gauge(replicaQueue, float64(r.Queue), r.Shard, r.Replica)
		gauge(replicaDeletions, float64(r.Deletions), r.Shard, r.Replica)
		gauge(replicaOldestDeletion, r.OldestDeletion.Seconds(), r.Shard, r.Replica)
	}
}

// one is 1 for true, 0 for false.
func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
