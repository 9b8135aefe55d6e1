//go:build !linux

package warehouse

import (
	"io/fs"
	"os"
	"path/filepath"
)

// syncDisk flushes every file under dir to its disk, one by one, where
// the system has no syncfs.
func syncDisk(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}
