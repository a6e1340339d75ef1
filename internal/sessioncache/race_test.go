//go:build race

package sessioncache

// distinctKeys is fewer under the race detector, which makes each insert
// some ten times slower; the bound is the same.
const distinctKeys = 100_000
