// The SQL functions by which SQLite's upserts add to a rollup row
// (sqlite.go): add_student_counts and union_students. They are in C
// because SQLite calls them from C, once for each row an upsert merges:
// registered through the driver, each call went through cgo and
// reflection, which cost more than the adding (BENCHMARKS.md).
//
// add_student_counts computes what rollup.AddRows computes, byte for
// byte, on the format that rollup.AppendCounts writes; union_students
// what rollup.UnionSets computes. TestSQLiteFunctionsMatchRollup holds
// them to the Go, on random rows and corrupt ones alike.

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "db_functions.h"

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_context sqlite3_context;
typedef struct sqlite3_value sqlite3_value;
typedef struct sqlite3_api_routines sqlite3_api_routines;

// The parts of SQLite's API used here, as sqlite3.h declares them; the
// driver links SQLite into the same binary.
int sqlite3_create_function(sqlite3 *, const char *, int, int, void *,
	void (*)(sqlite3_context *, int, sqlite3_value **),
	void (*)(sqlite3_context *, int, sqlite3_value **), void (*)(sqlite3_context *));
int sqlite3_auto_extension(void (*)(void));
int sqlite3_value_type(sqlite3_value *);
const void *sqlite3_value_blob(sqlite3_value *);
int sqlite3_value_bytes(sqlite3_value *);
void *sqlite3_malloc64(uint64_t);
void *sqlite3_realloc64(void *, uint64_t);
void sqlite3_free(void *);
void sqlite3_result_blob64(sqlite3_context *, const void *, uint64_t, void (*)(void *));
void sqlite3_result_error(sqlite3_context *, const char *, int);
void sqlite3_result_error_nomem(sqlite3_context *);

#define SQLITE_OK 0
#define SQLITE_INTEGER 1
#define SQLITE_FLOAT 2
#define SQLITE_NULL 5
#define SQLITE_UTF8 1
#define SQLITE_DETERMINISTIC 0x000000800

// countsFormat is rollup's: the first byte of an encoded row.
#define COUNTS_FORMAT 1
// MAX_METRICS: an entry's mask is one byte.
#define MAX_METRICS 8

static const char corrupt[] = "corrupt student counts";

// numMetrics is analytics.NumMetrics, set once before any connection.
static int numMetrics;

// uvarint reads what Go's binary.Uvarint reads, as it does: the bytes
// read, 0 if b ends first, or negative on overflow.
static int uvarint(const uint8_t *b, size_t len, uint64_t *x) {
	uint64_t v = 0;
	unsigned s = 0;
	for (size_t i = 0; i < len; i++) {
		if (i == 10) {
			return -(int)(i + 1);
		}
		uint8_t c = b[i];
		if (c < 0x80) {
			if (i == 9 && c > 1) {
				return -(int)(i + 1);
			}
			*x = v | (uint64_t)c << s;
			return (int)(i + 1);
		}
		v |= (uint64_t)(c & 0x7f) << s;
		s += 7;
	}
	return 0;
}

// varint reads what Go's binary.Varint reads.
static int varint(const uint8_t *b, size_t len, int64_t *x) {
	uint64_t u = 0;
	int n = uvarint(b, len, &u);
	int64_t v = (int64_t)(u >> 1);
	if (u & 1) {
		v = ~v;
	}
	*x = v;
	return n;
}

// buffer is the row being written, grown as needed.
typedef struct {
	uint8_t *b;
	size_t len, cap;
	int failed; // out of memory
} buffer;

static int grow(buffer *out, size_t n) {
	if (out->failed) {
		return 0;
	}
	if (out->len + n <= out->cap) {
		return 1;
	}
	size_t cap = out->cap * 2 + n + 64;
	uint8_t *b = sqlite3_realloc64(out->b, cap);
	if (b == NULL) {
		out->failed = 1;
		return 0;
	}
	out->b = b;
	out->cap = cap;
	return 1;
}

static void appendBytes(buffer *out, const uint8_t *b, size_t n) {
	if (n > 0 && grow(out, n)) {
		memcpy(out->b + out->len, b, n);
		out->len += n;
	}
}

static void appendUvarint(buffer *out, uint64_t x) {
	if (!grow(out, 10)) {
		return;
	}
	while (x >= 0x80) {
		out->b[out->len++] = (uint8_t)x | 0x80;
		x >>= 7;
	}
	out->b[out->len++] = (uint8_t)x;
}

static void appendVarint(buffer *out, int64_t x) {
	uint64_t u = (uint64_t)x << 1;
	if (x < 0) {
		u = ~u;
	}
	appendUvarint(out, u);
}

// student is one student's counts, as rollup.StudentCounts.
typedef struct {
	int64_t ordinal;
	int64_t counts[MAX_METRICS];
} student;

// appendStudent is rollup's appendStudent: the entry after *next, left
// out if its counts are all zeros.
static void appendStudent(buffer *out, int64_t *next, const student *s) {
	uint8_t mask = 0;
	for (int m = 0; m < numMetrics; m++) {
		if (s->counts[m] != 0) {
			mask |= (uint8_t)(1 << m);
		}
	}
	if (mask == 0) {
		return;
	}
	appendUvarint(out, (uint64_t)(s->ordinal - *next));
	appendBytes(out, &mask, 1);
	for (int m = 0; m < numMetrics; m++) {
		if (s->counts[m] != 0) {
			appendVarint(out, s->counts[m]);
		}
	}
	*next = s->ordinal + 1;
}

// decodeStudents is rollup.DecodeCounts: the students of an encoded row,
// in a new array (sqlite3_free), their number in *n; NULL with *n 0 for
// a corrupt row, and with *n -1 when out of memory.
static student *decodeStudents(const uint8_t *b, size_t len, int64_t *n) {
	*n = 0;
	if (len == 0 || b[0] != COUNTS_FORMAT) {
		return NULL;
	}
	b++;
	len--;
	// Each entry takes at least two bytes.
	student *students = sqlite3_malloc64((len / 2 + 1) * sizeof(student));
	if (students == NULL) {
		*n = -1;
		return NULL;
	}
	int64_t count = 0, next = 0;
	while (len > 0) {
		uint64_t gap;
		if (b[0] < 0x80) {
			gap = b[0];
			b++;
			len--;
		} else {
			int k = uvarint(b, len, &gap);
			if (k <= 0 || gap > (uint64_t)1 << 31) {
				goto corrupt;
			}
			b += k;
			len -= (size_t)k;
		}
		if (len == 0) {
			goto corrupt;
		}
		uint8_t mask = b[0];
		b++;
		len--;
		student *s = &students[count++];
		memset(s, 0, sizeof *s);
		s->ordinal = next + (int64_t)gap;
		next = s->ordinal + 1;
		for (int m = 0; m < numMetrics; m++) {
			if (!(mask & (1 << m))) {
				continue;
			}
			int64_t v;
			int k = varint(b, len, &v);
			if (k <= 0) {
				goto corrupt;
			}
			s->counts[m] = v;
			b += k;
			len -= (size_t)k;
		}
	}
	*n = count;
	return students;
corrupt:
	sqlite3_free(students);
	return NULL;
}

// entrySize is rollup's entrySize: the length of the entry body at the
// start of b (its mask and a varint per bit set), or 0 if corrupt.
static size_t entrySize(const uint8_t *b, size_t len) {
	if (len == 0 || b[0] >> numMetrics != 0) {
		return 0;
	}
	size_t n = 1;
	for (int m = 0; m < numMetrics; m++) {
		if (!(b[0] & (1 << m))) {
			continue;
		}
		int64_t v;
		int k = varint(b + n, len - n, &v);
		if (k <= 0) {
			return 0;
		}
		n += (size_t)k;
	}
	return n;
}

// addToRow is rollup.AddToRow: row (NULL for none) with the students
// added, into out; 0 if row is corrupt.
static int addToRow(buffer *out, const uint8_t *row, size_t len, int isNull, const student *add, int64_t nAdd) {
	uint8_t format = COUNTS_FORMAT;
	int64_t outNext = 0;
	appendBytes(out, &format, 1);
	if (!isNull) {
		if (len == 0 || row[0] != COUNTS_FORMAT) {
			return 0;
		}
		const uint8_t *b = row + 1;
		size_t left = len - 1;
		int64_t next = 0;
		while (left > 0) {
			uint64_t gap;
			int k = uvarint(b, left, &gap);
			if (k <= 0 || gap > (uint64_t)1 << 31) {
				return 0;
			}
			size_t size = entrySize(b + k, left - (size_t)k);
			if (size == 0) {
				return 0;
			}
			int64_t ordinal = next + (int64_t)gap;
			const uint8_t *body = b + k;
			b += (size_t)k + size;
			left -= (size_t)k + size;
			next = ordinal + 1;
			for (; nAdd > 0 && add->ordinal < ordinal; add++, nAdd--) {
				appendStudent(out, &outNext, add);
			}
			if (nAdd > 0 && add->ordinal == ordinal) {
				student sum = *add;
				const uint8_t *v = body + 1;
				for (int m = 0; m < numMetrics; m++) {
					if (body[0] & (1 << m)) {
						int64_t x;
						v += varint(v, (size_t)(body + size - v), &x);
						sum.counts[m] = (int64_t)((uint64_t)sum.counts[m] + (uint64_t)x);
					}
				}
				appendStudent(out, &outNext, &sum);
				add++;
				nAdd--;
				continue;
			}
			// Untouched: the same bytes, behind its gap from the new
			// neighbour.
			appendUvarint(out, (uint64_t)(ordinal - outNext));
			appendBytes(out, body, size);
			outNext = ordinal + 1;
		}
	}
	for (; nAdd > 0; add++, nAdd--) {
		appendStudent(out, &outNext, add);
	}
	return 1;
}

// blob is a BLOB, TEXT or NULL argument as the driver gave it to the Go
// functions.
typedef struct {
	const uint8_t *b;
	size_t len;
	int isNull;
} blob;

// blobArgs reads a function's two arguments into args; 0, with err set
// as the error, for a number, which the Go functions refused.
static int blobArgs(sqlite3_context *ctx, sqlite3_value **argv, const char *err, blob args[2]) {
	for (int i = 0; i < 2; i++) {
		int type = sqlite3_value_type(argv[i]);
		if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
			sqlite3_result_error(ctx, err, -1);
			return 0;
		}
		args[i].isNull = type == SQLITE_NULL;
		args[i].b = args[i].isNull ? NULL : sqlite3_value_blob(argv[i]);
		args[i].len = args[i].isNull ? 0 : (size_t)sqlite3_value_bytes(argv[i]);
	}
	return 1;
}

static void addStudentCounts(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
	blob args[2];
	(void)argc;
	if (!blobArgs(ctx, argv, "add_student_counts: arguments must be BLOB", args)) {
		return;
	}
	int64_t nAdd;
	student *add = decodeStudents(args[1].b, args[1].len, &nAdd);
	if (add == NULL) {
		if (nAdd < 0) {
			sqlite3_result_error_nomem(ctx);
		} else {
			sqlite3_result_error(ctx, corrupt, -1);
		}
		return;
	}
	buffer out = {0};
	grow(&out, args[0].len + 64);
	int ok = addToRow(&out, args[0].b, args[0].len, args[0].isNull, add, nAdd);
	sqlite3_free(add);
	if (out.failed) {
		sqlite3_free(out.b);
		sqlite3_result_error_nomem(ctx);
		return;
	}
	if (!ok) {
		sqlite3_free(out.b);
		sqlite3_result_error(ctx, corrupt, -1);
		return;
	}
	sqlite3_result_blob64(ctx, out.b, out.len, sqlite3_free);
}

static void unionStudents(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
	blob args[2];
	(void)argc;
	if (!blobArgs(ctx, argv, "union_students: arguments must be BLOB", args)) {
		return;
	}
	// The longer one copied, the shorter ORed into it.
	blob a = args[0], b = args[1];
	if (a.len < b.len) {
		a = args[1];
		b = args[0];
	}
	uint8_t *out = sqlite3_malloc64(a.len + 1);
	if (out == NULL) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	if (a.len > 0) {
		memcpy(out, a.b, a.len);
	}
	for (size_t i = 0; i < b.len; i++) {
		out[i] |= b.b[i];
	}
	sqlite3_result_blob64(ctx, out, a.len, sqlite3_free);
}

static int registerFunctions(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
	(void)err;
	(void)api;
	int rc = sqlite3_create_function(db, "add_student_counts", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
		addStudentCounts, NULL, NULL);
	if (rc != SQLITE_OK) {
		return rc;
	}
	return sqlite3_create_function(db, "union_students", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
		unionStudents, NULL, NULL);
}

int ga_register_functions(int metrics) {
	if (metrics < 1 || metrics > MAX_METRICS) {
		return 1;
	}
	numMetrics = metrics;
	return sqlite3_auto_extension((void (*)(void))registerFunctions);
}
