-- The schema every shard starts with. {database} is the usage URL's
-- database. Each statement may run again (ClickHouse has no transactions:
-- a migration cut short is run again whole), so each says IF NOT EXISTS.
-- It also adopts the shards of releases that made these tables without
-- migrations.

-- Raw events, ordered by (group, id): a group's events sit together and an
-- id is found by the primary index. No table is partitioned: a write's rows
-- for one table are one INSERT, hence one part, which readers see whole or
-- not at all.
CREATE TABLE IF NOT EXISTS {database}.events (
	group_id String, event_id String, student_id String,
	occurred_at Int64, metric UInt8, seq UInt64
) ENGINE = MergeTree() ORDER BY (group_id, event_id);

-- Counts per student and period, as deltas that merges add up.
CREATE TABLE IF NOT EXISTS {database}.student_rollups (
	group_id String, span UInt8, period Int32, student_id String,
	sessions Int64, tutor_me Int64, test Int64, flashcard Int64,
	material Int64, live_lecture Int64, main Int64
) ENGINE = SummingMergeTree() ORDER BY (group_id, span, period, student_id);

-- The group's counts and student sets per period: each write inserts the
-- new state of the rows it changes, numbered by the group's write
-- sequence; the highest number is the current row.
CREATE TABLE IF NOT EXISTS {database}.group_rollups (
	group_id String, span UInt8, period Int32,
	sessions Int64, tutor_me Int64, test Int64, flashcard Int64,
	material Int64, live_lecture Int64, main Int64,
	live_lecture_users String, chat_users String, version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY (group_id, span, period);

-- The students' ordinals: their places in the group rollups' sets.
CREATE TABLE IF NOT EXISTS {database}.students (
	group_id String, student_id String, ordinal UInt32
) ENGINE = ReplacingMergeTree() ORDER BY (group_id, student_id);
