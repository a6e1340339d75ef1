// Package migrations embeds the SQL migrations of both dialects. Each change
// is written twice, under the same file name, in postgres/ and sqlite/;
// a test keeps the two sets in step.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// FS returns the migrations of a dialect ("postgres" or "sqlite").
func FS(dialect string) (fs.FS, error) {
	switch dialect {
	case "postgres", "sqlite":
		return fs.Sub(files, dialect)
	}
	return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
}
