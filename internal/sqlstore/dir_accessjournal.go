package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"time"

	"groupanalytics/internal/analytics"
)

// accessJournal is where a SQLite store's access log entries go first: a
// file beside the store (<store>-access), one JSON line an entry. An
// answer's entry is written there with one write, which the operating
// system holds once it returns: it survives a crash of the service, as a
// commit does, for a system call rather than a transaction. A commit for
// each answer was most of what the log cost a small answer: its own work,
// and the page cache of every reading connection, which each commit
// empties (BENCHMARKS.md, the access log). Within foldEvery the entries
// are folded into access_log, in one synced transaction, and the file is
// emptied: a power cut loses the entries of the last second at most.
//
// Every process that opens the store may append and fold: an append holds
// a shared flock, a fold an exclusive one, so that no append falls between
// a fold's read and its truncation. Folding is idempotent: its transaction
// records the id of the last line it folded, and a fold that finds that
// line (its truncation cut short by a crash) folds only the lines after
// it.
type accessJournal struct {
	path string
	// mu orders this process's appends and folds: a flock belongs to the
	// open file, which they share, not to the goroutine.
	mu sync.Mutex
	f  *os.File // opened by the first append, or fold that finds the file
	// failed, while set, fails appends: entries written now might not
	// reach the disk (neither folded nor the file synced), or the file
	// has grown past maxJournalBytes.
	failed error
}

// journaled is a line of the journal: an entry and the line's random id.
type journaled struct {
	Line     int64    `json:"line"`
	GroupID  string   `json:"group"`
	At       int64    `json:"at"` // Unix milliseconds
	KeyID    string   `json:"key"`
	Client   string   `json:"client"`
	Endpoint string   `json:"endpoint"`
	Format   string   `json:"format"`
	Start    string   `json:"start"`
	End      string   `json:"end"`
	Interval string   `json:"interval"`
	Classes  []string `json:"classes,omitempty"`
	Students []string `json:"students,omitempty"`
	// Person is who asked, for a signed-in session's answer.
	Person *analytics.Person `json:"person,omitempty"`
}

const (
	// foldEvery bounds how long an entry waits in the journal.
	foldEvery = time.Second
	// maxJournalBytes bounds the journal while folds fail: past it, answers
	// with student figures are refused rather than the disk filled.
	maxJournalBytes = 64 << 20
)

func journalOf(e analytics.AccessEntry) journaled {
	return journaled{Line: rand.Int64(), GroupID: e.GroupID, At: millis(e.At), KeyID: e.KeyID, Client: e.Client,
		Endpoint: e.Endpoint, Format: e.Format, Start: e.StartDate, End: e.EndDate, Interval: e.Interval,
		Classes: e.ClassIDs, Students: e.StudentIDs, Person: e.Person}
}

func (j journaled) entry() analytics.AccessEntry {
	return analytics.AccessEntry{GroupID: j.GroupID, At: fromMillis(j.At), KeyID: j.KeyID, Client: j.Client,
		Endpoint: j.Endpoint, Format: j.Format, StartDate: j.Start, EndDate: j.End, Interval: j.Interval,
		ClassIDs: j.Classes, StudentIDs: j.Students, Person: j.Person}
}

// open opens the journal, creating it if create is set. Without create a
// journal that does not exist leaves f nil: there is nothing to fold.
func (j *accessJournal) open(create bool) error {
	if j.f != nil {
		return nil
	}
	flags := os.O_RDWR | os.O_APPEND
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(j.path, flags, 0o600)
	if errors.Is(err, os.ErrNotExist) && !create {
		return nil
	}
	j.f = f
	return err
}

// append writes the entry's line.
func (j *accessJournal) append(e analytics.AccessEntry) error {
	line, err := json.Marshal(journalOf(e))
	if err != nil {
		return err
	}
	line = append(line, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return j.failed
	}
	if err := j.open(true); err != nil {
		return journalError("open", err)
	}
	return journalError("write", j.locked(syscall.LOCK_SH, func() error {
		_, err := j.f.Write(line)
		return err
	}))
}

// journalError says that the journal failed to do what, as unavailable
// (a 503): the disk, not the request, is at fault.
func journalError(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s the access journal: %w: %w", what, analytics.ErrUnavailable, err)
}

// locked runs fn holding the journal's flock, shared or exclusive as how
// says.
func (j *accessJournal) locked(how int, fn func() error) error {
	fd := int(j.f.Fd())
	if err := syscall.Flock(fd, how); err != nil {
		return err
	}
	defer syscall.Flock(fd, syscall.LOCK_UN)
	return fn()
}

// foldAccess moves the entries written since the last fold, in the journal
// (SQLite) or access_pending (PostgreSQL), into access_log. Reads of the
// log fold first, so that they see every entry written.
func (s *Store) foldAccess(ctx context.Context) error {
	j := s.journal
	if j == nil {
		return s.foldPending(ctx)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.open(false); err != nil || j.f == nil {
		return journalError("open", err)
	}
	err := j.locked(syscall.LOCK_EX, func() error {
		st, err := j.f.Stat()
		if err != nil || st.Size() == 0 {
			return err
		}
		data, err := io.ReadAll(io.NewSectionReader(j.f, 0, st.Size()))
		if err != nil {
			return err
		}
		if err := s.transact(ctx, "FoldAccessLog", func(tx *txn) error { return s.foldLines(ctx, tx, data) }); err != nil {
			return err
		}
		return j.f.Truncate(0)
	})
	return journalError("fold", err)
}

// foldLines writes the journal's lines into access_log, those after the
// last line folded before, and records the last. A line cut short (the
// machine stopped within a write) or unreadable is left out.
func (s *Store) foldLines(ctx context.Context, tx *txn, data []byte) error {
	var folded int64
	err := tx.QueryRowContext(ctx, `SELECT last_line FROM access_journal`).Scan(&folded)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var lines []journaled
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		var l journaled
		if json.Unmarshal(data[:i], &l) == nil {
			if l.Line == folded {
				lines = lines[:0] // folded already, and every line before
			} else {
				lines = append(lines, l)
			}
		}
		data = data[i+1:]
	}
	if len(lines) == 0 {
		return nil
	}
	entries := make([]analytics.AccessEntry, len(lines))
	for i, l := range lines {
		entries[i] = l.entry()
	}
	if err := s.insertAccessIn(ctx, tx, entries); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO access_journal (id, last_line) VALUES (1, ?)
		ON CONFLICT (id) DO UPDATE SET last_line = excluded.last_line`, lines[len(lines)-1].Line)
	return err
}

// foldAccessEvery folds the entries written every foldEvery until stop
// closes. On PostgreSQL a fold that fails leaves them in access_pending,
// where they are as safe, for the next (reads of the log fold first, and
// fail while folds do). A fold of the journal that fails leaves the
// entries in the journal, synced there; when that fails too, or the
// journal grows past maxJournalBytes, appends fail until a fold succeeds.
// Without a journal to fold, appends tell for themselves whether one can
// be written.
func (s *Store) foldAccessEvery(stop <-chan struct{}) {
	defer s.writers.Done()
	tick := time.NewTicker(foldEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		err := s.foldAccess(context.Background())
		j := s.journal
		if j == nil {
			continue
		}
		j.mu.Lock()
		if err != nil && j.f != nil {
			if st, statErr := j.f.Stat(); statErr != nil || st.Size() > maxJournalBytes {
				err = fmt.Errorf("the access journal is over %d bytes and cannot be folded: %w", maxJournalBytes, err)
			} else if syncErr := j.f.Sync(); syncErr == nil {
				err = nil
			}
		}
		j.failed = nil
		if j.f != nil {
			j.failed = err // unavailable, as foldAccess says
		}
		j.mu.Unlock()
	}
}

// close closes the journal's file.
func (j *accessJournal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
