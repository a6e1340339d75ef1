//go:build !race

package sessioncache

const distinctKeys = 1_000_000
