// Package sessioncache keeps validated sessions in process, so that an
// authenticated request reads nothing from the database. It is bounded by
// entries (the least recently used goes first), forgets a user's entries
// when told their sessions changed, and serves nothing while its owner
// cannot hear such news (Pause until Resume).
//
// A read that misses goes to the database and offers its result back with
// the Ticket it took before reading: if anything was forgotten in between,
// the result may predate that change and is not kept.
package sessioncache

import (
	"sync"

	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Key is what a session is found by: the SHA-256 of its token.
type Key = [32]byte

// Cache holds values of type V by Key, each belonging to a user.
type Cache[V any] struct {
	mu sync.Mutex
	// lru is only touched under mu; simplelru rather than the locked
	// lru.Cache, since byUser must change in step with it.
	lru    *simplelru.LRU[Key, entry[V]]
	byUser map[uuid.UUID][]Key
	// gen counts the times anything was forgotten or the cache paused.
	gen     uint64
	serving bool
}

type entry[V any] struct {
	user  uuid.UUID
	value V
}

// Ticket is the cache's state before a read-through; see Put.
type Ticket uint64

// New returns a cache of at most size entries that serves once Resume is
// called.
func New[V any](size int) *Cache[V] {
	c := &Cache[V]{byUser: map[uuid.UUID][]Key{}}
	l, err := simplelru.NewLRU(max(size, 1), c.evicted)
	if err != nil {
		panic(err) // only for a size below 1, which max rules out
	}
	c.lru = l
	return c
}

// evicted drops an entry leaving the LRU from the user index; mu is held.
func (c *Cache[V]) evicted(k Key, e entry[V]) {
	keys := c.byUser[e.user]
	for i := range keys {
		if keys[i] == k {
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
			break
		}
	}
	if len(keys) == 0 {
		delete(c.byUser, e.user)
		return
	}
	c.byUser[e.user] = keys
}

// Get returns the value under k, or false when there is none or the cache
// is paused.
func (c *Cache[V]) Get(k Key) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.serving {
		var zero V
		return zero, false
	}
	e, ok := c.lru.Get(k)
	return e.value, ok
}

// Begin returns the ticket a read-through hands to Put.
func (c *Cache[V]) Begin() Ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Ticket(c.gen)
}

// Put keeps v under k for user, unless something was forgotten (or the
// cache paused) since t was taken: v may then be older than that change.
func (c *Cache[V]) Put(t Ticket, k Key, user uuid.UUID, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.serving || uint64(t) != c.gen {
		return
	}
	if c.lru.Contains(k) {
		c.lru.Remove(k) // so that the index holds k once
	}
	c.lru.Add(k, entry[V]{user: user, value: v})
	c.byUser[user] = append(c.byUser[user], k)
}

// Remove forgets the entry under k.
func (c *Cache[V]) Remove(k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lru.Remove(k)
}

// ForgetUser forgets every entry of user.
func (c *Cache[V]) ForgetUser(user uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, k := range append([]Key(nil), c.byUser[user]...) {
		c.lru.Remove(k)
	}
}

// Pause empties the cache and stops it serving until Resume: its owner
// can no longer hear of changes.
func (c *Cache[V]) Pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.serving = false
	c.lru.Purge()
	clear(c.byUser)
}

// Resume empties the cache (changes may have been missed while paused)
// and lets it serve.
func (c *Cache[V]) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.serving = true
	c.lru.Purge()
	clear(c.byUser)
}

// Len returns the number of entries.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
