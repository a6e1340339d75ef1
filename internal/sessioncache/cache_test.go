package sessioncache

import (
	"crypto/sha256"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"

	"github.com/google/uuid"
)

func key(i int) Key {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	return sha256.Sum256(b[:])
}

func TestServesOnlyWhileListening(t *testing.T) {
	c := New[string](10)
	u := uuid.New()
	c.Put(c.Begin(), key(1), u, "a")
	if _, ok := c.Get(key(1)); ok || c.Len() != 0 {
		t.Fatal("a cache that never resumed kept or served an entry")
	}
	c.Resume()
	c.Put(c.Begin(), key(1), u, "a")
	if v, ok := c.Get(key(1)); !ok || v != "a" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	c.Pause()
	if _, ok := c.Get(key(1)); ok {
		t.Fatal("a paused cache served")
	}
	c.Resume()
	if _, ok := c.Get(key(1)); ok {
		t.Fatal("an entry from before the pause survived it")
	}
}

func TestForgetUser(t *testing.T) {
	c := New[int](10)
	c.Resume()
	a, b := uuid.New(), uuid.New()
	for i := range 3 {
		c.Put(c.Begin(), key(i), a, i)
	}
	c.Put(c.Begin(), key(9), b, 9)
	c.Put(c.Begin(), key(1), a, 11) // again: the index holds it once
	c.ForgetUser(a)
	for i := range 3 {
		if _, ok := c.Get(key(i)); ok {
			t.Fatalf("entry %d of the forgotten user served", i)
		}
	}
	if v, ok := c.Get(key(9)); !ok || v != 9 || c.Len() != 1 || len(c.byUser) != 1 {
		t.Fatalf("other user's entry %v %v, len %d, index %v", v, ok, c.Len(), c.byUser)
	}
}

// A read that began before something was forgotten may hold what the
// change replaced: it is not kept.
func TestStaleReadIsNotKept(t *testing.T) {
	c := New[string](10)
	c.Resume()
	u := uuid.New()
	ticket := c.Begin()
	c.ForgetUser(u) // a revocation lands while the read is under way
	c.Put(ticket, key(1), u, "before the revocation")
	if _, ok := c.Get(key(1)); ok {
		t.Fatal("a read from before the revocation was kept")
	}
	ticket = c.Begin()
	c.Pause()
	c.Resume()
	c.Put(ticket, key(1), u, "read across a gap")
	if _, ok := c.Get(key(1)); ok {
		t.Fatal("a read from before a listening gap was kept")
	}
}

// A million distinct sessions (a tenth under the race detector) through a
// cache of 10,000 leave 10,000 entries, an index of no more, and a heap
// within 10,000 entries' worth.
func TestMillionKeysStayWithinBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a million entries")
	}
	// entryBytes: the cache's own bookkeeping (list element, map slots,
	// user index) beside the value's 512 bytes.
	const size, entryBytes = 10_000, 1536
	type value [512]byte
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := New[*value](size)
	c.Resume()
	for i := range distinctKeys {
		var u uuid.UUID
		binary.LittleEndian.PutUint64(u[:], uint64(i))
		var k Key
		binary.LittleEndian.PutUint64(k[:], uint64(i))
		c.Put(c.Begin(), k, u, new(value))
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if c.Len() != size || len(c.byUser) != size {
		t.Fatalf("len %d, index %d; want %d", c.Len(), len(c.byUser), size)
	}
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew %d KiB for %d entries (%d bytes each)", grown>>10, size, grown/size)
	if grown > size*entryBytes {
		t.Fatalf("heap grew %d bytes, more than %d entries of %d", grown, size, entryBytes)
	}
	runtime.KeepAlive(c)
}

// Readers, writers and forgetters at once: run with -race.
func TestConcurrentUse(t *testing.T) {
	c := New[int](64)
	c.Resume()
	users := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := key(i % 100)
				switch (g + i) % 4 {
				case 0:
					c.Put(c.Begin(), k, users[i%3], i)
				case 1:
					c.Get(k)
				case 2:
					c.ForgetUser(users[i%3])
				default:
					c.Remove(k)
				}
			}
		})
	}
	wg.Wait()
	if c.Len() > 64 {
		t.Fatalf("len %d over the bound", c.Len())
	}
	n := 0
	for _, keys := range c.byUser {
		n += len(keys)
	}
	if n != c.Len() {
		t.Fatalf("index holds %d keys, the cache %d", n, c.Len())
	}
}
