package account

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/scrypt"
	"golang.org/x/text/unicode/norm"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Argon2Params are the argon2id cost parameters of new hashes.
type Argon2Params struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
}

const (
	argon2SaltLen = 16
	argon2KeyLen  = 32

	// Limits on parameters read back from stored hashes, so that a corrupt
	// row cannot make one sign-in allocate gigabytes.
	maxArgon2MemoryKiB  = 1 << 20
	maxArgon2Iterations = 64
	maxArgon2KeyLen     = 128

	// better-auth's scrypt parameters (@better-auth/utils password.node).
	scryptN      = 16384
	scryptR      = 16
	scryptP      = 1
	scryptKeyLen = 64
)

// Hasher makes and checks password hashes. New hashes are argon2id PHC
// strings; better-auth's scrypt hashes are verified so that accounts carried
// over from the original service keep working. Passwords are NFKC-normalised
// first, as better-auth does, so the same keystrokes on another keyboard
// layout still match.
//
// Each hash holds Argon2Params.MemoryKiB of memory (scrypt holds 32 MiB), so
// at most GOMAXPROCS run at once; more would only queue for the CPU anyway,
// while multiplying peak memory under a burst of sign-ins. Admission keeps
// the queue short: a hash waits at most Admission.Wait for a slot, and one
// client (an address, an account) has at most Admission.PerClient hashes
// waiting or running, so a flood of wrong passwords cannot starve everyone
// else of the slots.
type Hasher struct {
	params    Argon2Params
	slots     chan struct{}
	admission Admission

	mu       sync.Mutex
	inFlight map[string]int // hashes waiting or running, per client key
	waiting  atomic.Int64   // hashes waiting for a slot
}

// queuePerSlot bounds the hashes waiting for a slot: past it a request is
// refused at once, as it would only time out at the end of its wait.
const queuePerSlot = 4

// Admission bounds the wait for a hashing slot.
type Admission struct {
	// Wait is how long a hash waits for a slot before the request is
	// refused with SERVICE_UNAVAILABLE; zero waits as long as the context.
	Wait time.Duration
	// PerClient is how many hashes one client key may have waiting or
	// running at once; zero means no limit.
	PerClient int
}

// ErrHashBusy refuses a hash that found no slot within the admission wait.
var ErrHashBusy = &platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable,
	Message: "The server is busy checking passwords; try again shortly.", RetryAfter: 2 * time.Second}

// ErrHashClientBusy refuses a hash from a client that has as many in
// flight as Admission.PerClient allows.
var ErrHashClientBusy = &platform.Error{Kind: platform.KindRateLimited, Code: platform.CodeRateLimited,
	Message: "Too many requests. Please try again later.", RetryAfter: time.Second}

// RefusedBeforeHash reports whether err refused a hash before it ran: no
// slot was free in time, or the client had too many in flight.
func RefusedBeforeHash(err error) bool {
	return errors.Is(err, ErrHashBusy) || errors.Is(err, ErrHashClientBusy)
}

// NewHasher returns a hasher that makes new hashes with params and admits
// hashes as admission says.
func NewHasher(params Argon2Params, admission Admission) *Hasher {
	return &Hasher{params: params, slots: make(chan struct{}, runtime.GOMAXPROCS(0)), admission: admission,
		inFlight: make(map[string]int)}
}

type clientKeysKey struct{}

// WithClientKeys names the clients (such as "ip|203.0.113.9" and
// "account|player|a@example.com") that the hashes made under ctx count
// against.
func WithClientKeys(ctx context.Context, keys ...string) context.Context {
	return context.WithValue(ctx, clientKeysKey{}, keys)
}

// acquire waits for a hashing slot for the clients named in ctx, and
// returns the release to defer.
func (h *Hasher) acquire(ctx context.Context) (release func(), err error) {
	keys, _ := ctx.Value(clientKeysKey{}).([]string)
	if !h.enter(keys) {
		return nil, ErrHashClientBusy
	}
	if h.admission.Wait > 0 && h.waiting.Add(1) > int64(queuePerSlot*cap(h.slots)) {
		h.waiting.Add(-1)
		h.leave(keys)
		return nil, ErrHashBusy
	} else if h.admission.Wait > 0 {
		defer h.waiting.Add(-1)
	}
	var timeout <-chan time.Time
	if h.admission.Wait > 0 {
		t := time.NewTimer(h.admission.Wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots; h.leave(keys) }, nil
	case <-timeout:
		h.leave(keys)
		return nil, ErrHashBusy
	case <-ctx.Done():
		h.leave(keys)
		return nil, ctx.Err()
	}
}

// enter counts a hash against every key, or none when one is full. Keys
// are only in the map while a hash of theirs is waiting or running, so
// its size is bounded by the requests in flight.
func (h *Hasher) enter(keys []string) bool {
	if h.admission.PerClient <= 0 || len(keys) == 0 {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if h.inFlight[k] >= h.admission.PerClient {
			return false
		}
	}
	for _, k := range keys {
		h.inFlight[k]++
	}
	return true
}

func (h *Hasher) leave(keys []string) {
	if h.admission.PerClient <= 0 || len(keys) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if h.inFlight[k]--; h.inFlight[k] <= 0 {
			delete(h.inFlight, k)
		}
	}
}

// Hash returns the argon2id PHC string of password with a fresh salt.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	return h.HashIf(ctx, password, nil)
}

// HashIf is Hash, but first runs precheck (when not nil) once a hashing
// slot is free, and returns its error without hashing. Checks that would
// make the hash useless (the nickname was taken meanwhile) thus run as
// late as possible, so a queue of doomed requests costs no argon2.
func (h *Hasher) HashIf(ctx context.Context, password string, precheck func(context.Context) error) (string, error) {
	salt := make([]byte, argon2SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	release, err := h.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	if precheck != nil {
		if err := precheck(ctx); err != nil {
			return "", err
		}
	}
	p := h.params
	key := argon2.IDKey([]byte(norm.NFKC.String(password)), salt, p.Iterations, p.MemoryKiB, p.Parallelism, argon2KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Iterations, p.Parallelism,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// Verify reports whether password matches encoded, and whether encoded
// should be replaced because it is scrypt or uses other argon2id
// parameters. An unrecognised hash is an error, not a mismatch.
func (h *Hasher) Verify(ctx context.Context, encoded, password string) (ok, stale bool, err error) {
	if strings.HasPrefix(encoded, "$argon2id$") {
		ph, err := parseArgon2(encoded)
		if err != nil {
			return false, false, err
		}
		release, err := h.acquire(ctx)
		if err != nil {
			return false, false, err
		}
		defer release()
		key := argon2.IDKey([]byte(norm.NFKC.String(password)), ph.salt, ph.params.Iterations, ph.params.MemoryKiB,
			ph.params.Parallelism, uint32(len(ph.key)))
		ok := subtle.ConstantTimeCompare(key, ph.key) == 1
		return ok, ph.params != h.params || len(ph.key) != argon2KeyLen, nil
	}
	saltHex, keyHex, found := strings.Cut(encoded, ":")
	if !found {
		return false, false, fmt.Errorf("unrecognised password hash format")
	}
	want, err := hex.DecodeString(keyHex)
	if err != nil || len(want) != scryptKeyLen || len(saltHex) == 0 {
		return false, false, fmt.Errorf("malformed scrypt password hash")
	}
	release, err := h.acquire(ctx)
	if err != nil {
		return false, false, err
	}
	defer release()
	// better-auth passes the hex text of the salt, not its bytes, to scrypt.
	key, err := scrypt.Key([]byte(norm.NFKC.String(password)), []byte(saltHex), scryptN, scryptR, scryptP, scryptKeyLen)
	if err != nil {
		return false, false, err
	}
	return subtle.ConstantTimeCompare(key, want) == 1, true, nil
}

// BurnVerify spends the time of a real verification with the current
// parameters, against a salt and key that match nothing. Sign-in calls it
// for unknown emails so that timing does not reveal which accounts exist;
// it needs no stored dummy hash, so even the first call costs the same.
func (h *Hasher) BurnVerify(ctx context.Context, password string) error {
	release, err := h.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	p := h.params
	key := argon2.IDKey([]byte(norm.NFKC.String(password)), burnSalt[:], p.Iterations, p.MemoryKiB, p.Parallelism, argon2KeyLen)
	subtle.ConstantTimeCompare(key, burnKey[:])
	return nil
}

// burnSalt and burnKey stand in for an account that does not exist.
var (
	burnSalt = [argon2SaltLen]byte{'n', 'o', ' ', 's', 'u', 'c', 'h', ' ', 'a', 'c', 'c', 'o', 'u', 'n', 't', '!'}
	burnKey  [argon2KeyLen]byte
)

// CheckHash reports whether encoded is an argon2id PHC string that Verify
// accepts: well-formed, with parameters within Verify's limits. It does no
// hashing, so it cannot tell which password the hash is of.
func CheckHash(encoded string) error {
	_, err := parseArgon2(encoded)
	return err
}

type argon2Hash struct {
	params Argon2Params
	salt   []byte
	key    []byte
}

// parseArgon2 reads $argon2id$v=19$m=M,t=T,p=P$salt$key (unpadded base64).
func parseArgon2(encoded string) (*argon2Hash, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return nil, fmt.Errorf("malformed argon2id password hash")
	}
	var ph argon2Hash
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("malformed argon2id password hash parameters")
		}
		switch k {
		case "m":
			ph.params.MemoryKiB = uint32(n)
		case "t":
			ph.params.Iterations = uint32(n)
		case "p":
			if n > 255 {
				return nil, fmt.Errorf("malformed argon2id password hash parameters")
			}
			ph.params.Parallelism = uint8(n)
		default:
			return nil, fmt.Errorf("malformed argon2id password hash parameters")
		}
	}
	p := ph.params
	if p.MemoryKiB < 8 || p.MemoryKiB > maxArgon2MemoryKiB || p.Iterations < 1 || p.Iterations > maxArgon2Iterations || p.Parallelism < 1 {
		return nil, fmt.Errorf("argon2id password hash parameters out of range")
	}
	var err error
	if ph.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(ph.salt) < 8 {
		return nil, fmt.Errorf("malformed argon2id password hash salt")
	}
	if ph.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(ph.key) < 16 || len(ph.key) > maxArgon2KeyLen {
		return nil, fmt.Errorf("malformed argon2id password hash key")
	}
	return &ph, nil
}
