package warehouse

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncDisk flushes the file system holding dir to its disk.
func syncDisk(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
