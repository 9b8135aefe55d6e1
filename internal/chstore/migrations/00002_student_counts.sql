-- The students' counts as rows of counts by chunk of ordinals (see
-- package rollup), each write inserting the new state of the rows it
-- changes, numbered by the group's write sequence, as group_rollups
-- does. After this file's statements, a step in Go (convertStudentRollups)
-- converts student_rollups, if it is still there, and drops it.
CREATE TABLE IF NOT EXISTS {database}.student_counts (
	group_id String, span UInt8, period Int32, chunk UInt32,
	counts String, version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY (group_id, span, period, chunk);
