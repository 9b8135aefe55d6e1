package analytics

import (
	"strings"
	"time"
)

// AccessEntry records one answer that carried student-level data: who
// asked (a key, named by its id, prefix and label, never the key), from
// where, and for which students.
type AccessEntry struct {
	ID        int64
	GroupID   string
	At        time.Time
	KeyID     string
	KeyPrefix string // read with the entry, from the key
	KeyLabel  string
	// KeyDistrict is the district of a district's key, read with the
	// entry; empty for a school's key.
	KeyDistrict string
	// Person is who asked when a signed-in session did (KeyID empty).
	Person   *Person
	Client   string // the client's address, as the service sees it
	Endpoint string // the report endpoint's path
	Format   string // json or csv
	// StartDate and EndDate are the answer's first and last days, in the
	// group's zone; Interval is as asked ("none": one report).
	StartDate, EndDate, Interval string
	// ClassIDs: the class asked for, or else a teacher's key's classes.
	ClassIDs []string
	// StudentIDs are the students asked for, of StudentsAsked; none asked
	// (0) means every student the answer's classes or group had. A student
	// erased since is gone from StudentIDs, and counted by ErasedStudents.
	StudentIDs     []string
	StudentsAsked  int
	ErasedStudents int
}

// AccessFilter picks entries of a group's access log, newest first: about
// StudentID (the entries naming them, and those of all students, a class
// or a teacher's classes, which may have held them), at or after Since and
// before Until (zero: no bound), with IDs below Before (0: from the newest),
// at most Limit.
type AccessFilter struct {
	StudentID    string
	Since, Until time.Time
	Before       int64
	Limit        int
}

// warehouseEndpoint begins the Endpoint of a warehouse's delivery's
// entry, which names the warehouse after it: no key and no person asked.
const warehouseEndpoint = "warehouse:"

// DeliveryEntry is the access log's entry of a delivery to a warehouse,
// at at, to destination: its other fields are the caller's to fill.
func DeliveryEntry(groupID, warehouseID, destination string, at time.Time) AccessEntry {
	return AccessEntry{GroupID: groupID, At: at, Endpoint: warehouseEndpoint + warehouseID, Client: destination}
}

// Warehouse returns the warehouse of a delivery's entry, and whether it
// is one.
func (e AccessEntry) Warehouse() (string, bool) {
	if e.KeyID != "" || e.Person != nil {
		return "", false
	}
	return strings.CutPrefix(e.Endpoint, warehouseEndpoint)
}
