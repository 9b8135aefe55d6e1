package analytics

import "time"

// Warehouse is where a school's (GroupID) or a district's (DistrictID)
// daily usage files go: a bucket of an S3-compatible object store
// (Bucket set), or a folder under the server's warehouse directory
// (Folder set). Its files are Parquet or CSV (Format).
type Warehouse struct {
	ID         string
	GroupID    string
	DistrictID string
	Format     string // FormatParquet or FormatCSV
	// An S3-compatible bucket: its server's address (https://host[:port],
	// http only on loopback), region, the bucket and the prefix of every
	// key, and the district's own credentials. SecretKey is never shown
	// back.
	Endpoint  string
	Region    string
	Bucket    string
	Prefix    string
	AccessKey string
	SecretKey string
	// Folder is a path under the server's warehouse directory.
	Folder  string
	Created time.Time
	// From is the first day the schedule delivers, in each school's zone:
	// the day the warehouse was added. Earlier days come by a backfill.
	From Day
}

// Warehouse file formats.
const (
	FormatParquet = "parquet"
	FormatCSV     = "csv"
)

// WarehouseDay is one school's day to deliver, or delivered, to a
// warehouse.
type WarehouseDay struct {
	GroupID string
	Day     Day
	// Reason says why it is due: ReasonSchedule, ReasonBackfill or
	// ReasonErasure.
	Reason string
	// Delivered is when it was last written (zero: never).
	Delivered time.Time
}

// WarehouseState is what the directory knows of a warehouse's deliveries:
// its days queued, each school's last day the schedule delivered, and its
// last run.
type WarehouseState struct {
	// Pending are the first days queued, by school and day; Queued counts
	// them all.
	Pending   []WarehouseDay
	Queued    int
	Scheduled map[string]Day
	LastRun   time.Time
	LastError string
	// Failures counts the runs that failed since the last that did not;
	// RetryAt is when the next may start.
	Failures int
	RetryAt  time.Time
}

// Why a warehouse's day is due.
const (
	ReasonSchedule = "schedule"
	ReasonBackfill = "backfill"
	// ReasonErasure: a day delivered before held a student since erased.
	ReasonErasure = "erasure"
)
