package warehouse

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"groupanalytics/internal/analytics"
)

// Sink takes the files of a delivery: Put stores body under key (a
// slash-separated path), replacing what was there, so that a day written
// again is replaced exactly.
type Sink interface {
	Put(ctx context.Context, key string, body []byte) error
}

// Folder writes files under a directory: each to a temporary file beside
// it, renamed over the old, so that a reader never sees half a file. Sync
// makes them durable all at once.
type Folder struct{ Root string }

func (f Folder) Put(_ context.Context, key string, body []byte) error {
	name := filepath.Join(f.Root, filepath.FromSlash(key))
	dir := filepath.Dir(name)
	// Each file has a folder of its own, whose parents mostly exist: one
	// call makes it.
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrNotExist) {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("warehouse folder: %w", err)
	}
	// One writer a file at a time: a run puts each file once, and one
	// process at a time runs a warehouse.
	tmp := filepath.Join(dir, ".part-"+filepath.Base(name))
	err = os.WriteFile(tmp, body, 0o644)
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("warehouse folder: %w", err)
	}
	return nil
}

// Sync flushes the folder's files to its disk, all at once (a sync a
// file took longer than writing them): syncDisk.
func (f Folder) Sync() error {
	if err := syncDisk(f.Root); err != nil {
		return fmt.Errorf("warehouse folder: sync: %w", err)
	}
	return nil
}

// Zip writes files as the entries of a zip archive, streamed: the pull
// endpoint's answer.
type Zip struct{ W *zip.Writer }

// Parallel is 1: a zip is written in order, by one writer.
func (Zip) Parallel() int { return 1 }

func (z Zip) Put(_ context.Context, key string, body []byte) error {
	// Parquet files are compressed already; CSV and manifests are not.
	method := zip.Deflate
	if strings.HasSuffix(key, ".parquet") {
		method = zip.Store
	}
	w, err := z.W.CreateHeader(&zip.FileHeader{Name: key, Method: method, Modified: time.Now().UTC()})
	if err == nil {
		_, err = w.Write(body)
	}
	return err
}

// Bucket writes files to an S3-compatible bucket, under a prefix.
type Bucket struct {
	client *minio.Client
	bucket string
	prefix string
}

// OpenBucket returns the bucket of w, with its credentials: its server
// over https (http only on loopback, where tests run theirs).
func OpenBucket(w analytics.Warehouse) (*Bucket, error) {
	u, err := url.Parse(w.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || (u.Path != "" && u.Path != "/") {
		return nil, analytics.Errorf(analytics.Invalid, "Invalid endpoint %q: expected https://host[:port]", w.Endpoint)
	}
	if u.Scheme == "http" && !analytics.Loopback(u.Hostname()) {
		return nil, analytics.Errorf(analytics.Invalid, "Invalid endpoint %q: https is required (http only on loopback)", w.Endpoint)
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(w.AccessKey, w.SecretKey, ""),
		Secure: u.Scheme == "https",
		Region: w.Region,
		// AWS's endpoints by the bucket's host name, as new buckets
		// require; others (MinIO, SeaweedFS, Ceph, a loopback address) by
		// its path.
		BucketLookup: minio.BucketLookupAuto,
		MaxRetries:   1, // the delivery retries with its own backoff
	})
	if err != nil {
		return nil, analytics.Errorf(analytics.Invalid, "Invalid endpoint %q: %v", w.Endpoint, err)
	}
	return &Bucket{client: client, bucket: w.Bucket, prefix: w.Prefix}, nil
}

// Parallel is the puts a bucket takes at once: each waits for a round
// trip, and a store serves many.
func (*Bucket) Parallel() int { return 32 }

func (b *Bucket) Put(ctx context.Context, key string, body []byte) error {
	contentType := "application/vnd.apache.parquet"
	switch path.Ext(key) {
	case ".csv":
		contentType = "text/csv; charset=utf-8"
	case ".json":
		contentType = "application/json"
	}
	_, err := b.client.PutObject(ctx, b.bucket, path.Join(b.prefix, key), bytes.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: contentType, SendContentMd5: true})
	if err != nil {
		return fmt.Errorf("warehouse bucket %s: %s", b.bucket, describeS3(err))
	}
	return nil
}

// Check writes a small object under the prefix, and then deletes it where
// the credentials may: whether they may write there. Its error says why
// not, in the words of the server (never the credentials). Credentials
// that may only write (as a district may well give) leave the object,
// which no table's files match.
func (b *Bucket) Check(ctx context.Context) error {
	key := path.Join(b.prefix, ".groupanalytics-check")
	_, err := b.client.PutObject(ctx, b.bucket, key, strings.NewReader("ok"), 2, minio.PutObjectOptions{})
	if err != nil {
		return analytics.Errorf(analytics.Invalid, "The bucket %q refused a test write: %s", b.bucket, describeS3(err))
	}
	_ = b.client.RemoveObject(ctx, b.bucket, key, minio.RemoveObjectOptions{})
	return nil
}

// Try tries a warehouse's bucket before it is kept: a test write with its
// credentials, within 20 seconds. A folder is not tried: it is made at the
// first delivery.
func Try(ctx context.Context, w analytics.Warehouse) error {
	if w.Folder != "" {
		return nil
	}
	bucket, err := OpenBucket(w)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return bucket.Check(ctx)
}

// describeS3 is an S3 error as the log and an operator may read it: the
// server's code and message, or the connection's error.
func describeS3(err error) string {
	if r := minio.ToErrorResponse(err); r.Code != "" {
		return fmt.Sprintf("%s (%s)", r.Code, r.Message)
	}
	return err.Error()
}
