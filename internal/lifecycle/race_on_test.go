//go:build race

package lifecycle_test

import "time"

// replicaBound is how soon a replica must close a suspended account's
// stream; the race detector slows everything several times over.
const replicaBound = time.Second
