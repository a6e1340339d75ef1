package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/towerdefence/platformctl/internal/platform"
)

// refuseIfInUse refuses to replace the SQLite database at path while a
// process holds it open. Every SQLite connection in WAL mode keeps a shared
// lock on the database file and on its -shm index for as long as it is
// open, whether or not it is reading; serve keeps its pool open while it
// runs. So a lock on either file means someone (serve, a migration, a
// support command) would go on using the old file after a rename.
func refuseIfInUse(path string) error {
	for _, f := range []string{path, path + "-shm"} {
		pid, err := lockHolder(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("find out whether %s is in use: %w", f, err)
		}
		if pid != 0 {
			return platform.Errorf(platform.KindConflict, CodeDatabaseInUse,
				"%s is open in %s; stop serve (and every other platformctl using it) first", path, describeHolder(pid))
		}
	}
	return nil
}

func describeHolder(pid int) string {
	if pid < 0 {
		return "another process"
	}
	return fmt.Sprintf("pid %d (%s)", pid, processName(pid))
}
