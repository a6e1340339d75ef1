package account

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// With every slot busy, a hash waits the admission wait and is refused
// with 503; past the queue bound it is refused at once; a client with its
// allowance in flight is refused without waiting; and the per-client
// counts go when the hashes do.
func TestHashAdmission(t *testing.T) {
	h := NewHasher(testParams, Admission{Wait: 100 * time.Millisecond, PerClient: 1})
	var releases []func()
	for i := range cap(h.slots) {
		release, err := h.acquire(WithClientKeys(t.Context(), fmt.Sprint("ip|", i)))
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	start := time.Now()
	if _, err := h.acquire(WithClientKeys(t.Context(), "ip|late")); !errors.Is(err, ErrHashBusy) {
		t.Fatalf("acquire with every slot busy = %v, want ErrHashBusy", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("refused after %s, want after the 100ms wait", waited)
	}
	if _, err := h.acquire(WithClientKeys(t.Context(), "ip|0")); !errors.Is(err, ErrHashClientBusy) {
		t.Fatalf("a second hash for a client with one in flight = %v, want ErrHashClientBusy", err)
	}
	for _, release := range releases {
		release()
	}
	h.mu.Lock()
	left := len(h.inFlight)
	h.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d client keys left after every hash finished", left)
	}
	release, err := h.acquire(WithClientKeys(t.Context(), "ip|0"))
	if err != nil {
		t.Fatalf("after the release the client is refused: %v", err)
	}
	release()
}
