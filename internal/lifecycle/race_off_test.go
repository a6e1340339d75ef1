//go:build !race

package lifecycle_test

import "time"

// replicaBound is how soon a replica must close a suspended account's
// stream.
const replicaBound = 100 * time.Millisecond
