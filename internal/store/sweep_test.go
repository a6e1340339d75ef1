package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/ratelimit"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// sweepBatch is small, so every sweep below takes several batches and
// ends on a partial one.
const sweepBatch = 3

// sweepUser stores a player for the swept rows to belong to.
func sweepUser(t *testing.T, db *store.DB, now time.Time) uuid.UUID {
	t.Helper()
	id := uuid.New()
	u := &account.User{ID: id, Realm: account.RealmPlayer, Email: "swept-" + id.String() + "@example.com", Name: "Swept",
		Nickname: "swept" + id.String()[:8], PasswordHash: "x", CreatedAt: now, UpdatedAt: now}
	if err := db.Accounts().InsertUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// ids returns the ids the query selects, sorted.
func ids(t *testing.T, db *store.DB, query string) []uuid.UUID {
	t.Helper()
	var out []uuid.UUID
	if err := db.Bun().NewRaw(query).Scan(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return out
}

// sweepTwice runs a sweep as a dry run, then for real, then again: the dry
// run counts want and changes nothing, the real run changes want, the
// second run nothing.
func sweepTwice(t *testing.T, name string, want int, count func() int, sweep func(ctx context.Context, dryRun bool) (int, error)) {
	t.Helper()
	before := count()
	if n, err := sweep(t.Context(), true); err != nil || n != want || count() != before {
		t.Fatalf("%s dry run = %d, %v with %d rows left of %d; want %d counted and nothing changed", name, n, err, count(), before, want)
	}
	if n, err := sweep(t.Context(), false); err != nil || n != want {
		t.Fatalf("%s = %d, %v; want %d", name, n, err, want)
	}
	if n, err := sweep(t.Context(), false); err != nil || n != 0 {
		t.Fatalf("%s run again = %d, %v; want 0", name, n, err)
	}
}

// Expired sessions and mailed tokens go, a few rows a statement; live ones
// (expiring even a millisecond later) stay.
func TestSweepExpiredSessionsAndMailTokens(t *testing.T) {
	db := storetest.Open(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	user := sweepUser(t, db, now.Add(-48*time.Hour))
	var liveSessions, liveTokens []uuid.UUID
	for i := range 11 {
		expires := now.Add(-time.Duration(i) * time.Hour) // 0: expires exactly now
		if i >= 7 {
			expires = now.Add(time.Duration(i-6) * time.Millisecond)
		}
		s := &auth.Session{ID: uuid.New(), TokenHash: auth.HashToken(fmt.Sprintf("session-%d", i)), UserID: user, Realm: account.RealmPlayer,
			ExpiresAt: expires, CreatedAt: now.Add(-48 * time.Hour), UpdatedAt: now.Add(-48 * time.Hour)}
		if err := db.Sessions().InsertSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		tok := &auth.MailToken{ID: uuid.New(), Purpose: auth.PurposeResetPassword, Realm: account.RealmPlayer, UserID: user,
			Email: "swept@example.com", TokenHash: auth.HashToken(fmt.Sprintf("token-%d", i)), ExpiresAt: expires, CreatedAt: now.Add(-48 * time.Hour)}
		if err := db.Sessions().InTx(ctx, func(ctx context.Context, tx auth.Tx) error { return tx.InsertMailToken(ctx, tok) }); err != nil {
			t.Fatal(err)
		}
		if i >= 7 {
			liveSessions, liveTokens = append(liveSessions, s.ID), append(liveTokens, tok.ID)
		}
	}
	slices.SortFunc(liveSessions, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	slices.SortFunc(liveTokens, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	sw := db.Sweeps().WithBatch(sweepBatch)
	count := func(table string) func() int { return func() int { return len(ids(t, db, "SELECT id FROM "+table)) } }

	sweepTwice(t, "ExpiredSessions", 7, count("sessions"), func(ctx context.Context, dry bool) (int, error) {
		return sw.ExpiredSessions(ctx, now, dry)
	})
	if got := ids(t, db, "SELECT id FROM sessions"); !slices.Equal(got, liveSessions) {
		t.Errorf("sessions left %v, want the live ones %v", got, liveSessions)
	}
	sweepTwice(t, "ExpiredMailTokens", 7, count("auth_tokens"), func(ctx context.Context, dry bool) (int, error) {
		return sw.ExpiredMailTokens(ctx, now, dry)
	})
	if got := ids(t, db, "SELECT id FROM auth_tokens"); !slices.Equal(got, liveTokens) {
		t.Errorf("mailed tokens left %v, want the live ones %v", got, liveTokens)
	}
}

// A pending change untouched since the cut-off loses its new password hash
// and nothing else; a change untouched since the retention cut-off goes,
// with its tokens. Newer changes, and finished ones, keep everything.
func TestSweepProfileChanges(t *testing.T) {
	db := storetest.Open(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	// One user a change: a user has at most one pending change of a type.
	add := func(status profile.Status, hash string, touched time.Time) uuid.UUID {
		t.Helper()
		user := sweepUser(t, db, now.Add(-60*24*time.Hour))
		c := &profile.Change{ID: uuid.New(), UserID: user, Type: profile.TypePassword, Status: status, Step: profile.StepConfirm,
			NewPasswordHash: hash, BaseFingerprint: "f", CallbackURL: "https://play.example.com/confirm", RequestedBy: "user",
			CreatedAt: touched, UpdatedAt: touched}
		err := db.Profiles().InTx(ctx, func(ctx context.Context, tx profile.Tx) error {
			if err := tx.InsertChange(ctx, c); err != nil {
				return err
			}
			return tx.InsertToken(ctx, &profile.Token{Hash: "token-" + c.ID.String(), ChangeID: c.ID, UserID: user,
				Type: c.Type, Step: c.Step, CreatedAt: touched, ExpiresAt: touched.Add(time.Hour)})
		})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	staleCut, oldCut := now.Add(-time.Hour), now.Add(-profile.Retention)
	var stale, keep []uuid.UUID
	for i := range 5 { // untouched for exactly the token's life or longer
		stale = append(stale, add(profile.StatusPending, "new-hash", staleCut.Add(-time.Duration(i)*time.Minute)))
	}
	keep = append(keep, add(profile.StatusPending, "new-hash", staleCut.Add(time.Millisecond)))
	var old []uuid.UUID
	for i := range 4 {
		old = append(old, add(profile.StatusSuperseded, "", oldCut.Add(-time.Duration(i+1)*time.Millisecond)))
	}
	recent := add(profile.StatusCompleted, "", oldCut)
	sw := db.Sweeps().WithBatch(sweepBatch)
	hashes := func() int {
		return len(ids(t, db, "SELECT id FROM profile_changes WHERE new_password_hash IS NOT NULL"))
	}

	sweepTwice(t, "StalePasswordChanges", len(stale), hashes, func(ctx context.Context, dry bool) (int, error) {
		return sw.StalePasswordChanges(ctx, staleCut, dry)
	})
	if got := ids(t, db, "SELECT id FROM profile_changes WHERE new_password_hash IS NOT NULL"); !slices.Equal(got, keep) {
		t.Errorf("changes with a hash after the sweep %v, want only the live one %v", got, keep)
	}
	if n := len(ids(t, db, "SELECT id FROM profile_changes WHERE status = 'pending'")); n != len(stale)+len(keep) {
		t.Errorf("%d pending changes after dropping stale hashes, want all %d still there", n, len(stale)+len(keep))
	}

	changes := func() int { return len(ids(t, db, "SELECT id FROM profile_changes")) }
	sweepTwice(t, "OldProfileChanges", len(old), changes, func(ctx context.Context, dry bool) (int, error) {
		return sw.OldProfileChanges(ctx, oldCut, dry)
	})
	want := append(append(slices.Clone(stale), keep...), recent)
	slices.SortFunc(want, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	if got := ids(t, db, "SELECT id FROM profile_changes"); !slices.Equal(got, want) {
		t.Errorf("changes left %v, want %v", got, want)
	}
	if got := ids(t, db, "SELECT change_id FROM profile_tokens"); !slices.Equal(got, want) {
		t.Errorf("tokens left for changes %v, want those of the changes kept %v", got, want)
	}
}

// A holder paused past its lease writes nothing once another replica has
// taken the job over: every batch of a fenced sweep checks the lease, so
// two holders never sweep at once. A sweep outside the leases (prune) is
// not fenced.
func TestFencedSweepWritesOnlyUnderItsLease(t *testing.T) {
	db := storetest.Open(t)
	ctx := t.Context()
	t0 := time.Now()
	stale := func(n int) {
		t.Helper()
		for i := range n {
			key := ratelimit.Check{Key: fmt.Sprintf("stale-%d-%d", time.Now().UnixNano(), i), Rule: ratelimit.Rule{Limit: 1, Window: time.Second}}
			if _, _, err := db.RateLimits().Allow(ctx, t0.Add(-time.Hour), key); err != nil {
				t.Fatal(err)
			}
		}
	}
	const job = "rate-limit-counters"
	claim := func(holder string, at time.Time) {
		t.Helper()
		if ok, err := db.JobRuns().Claim(ctx, job, holder, time.Second, at); err != nil || !ok {
			t.Fatalf("%s's claim at %v: %v, %v", holder, at, ok, err)
		}
	}
	sweepAs := func(holder string) int {
		t.Helper()
		n, err := db.Sweeps().WithBatch(2).Fenced(job, holder).RateLimits(ctx, t0, false)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	claim("a", t0)
	stale(5)
	if n := sweepAs("a"); n != 5 {
		t.Fatalf("the holder swept %d of 5 rows", n)
	}
	stale(5)
	// a pauses; its lease lapses and b takes the job.
	claim("b", t0.Add(2*time.Second))
	if n := sweepAs("a"); n != 0 {
		t.Fatalf("the paused former holder swept %d rows after b took the job; want 0", n)
	}
	if n := sweepAs("b"); n != 5 {
		t.Fatalf("the new holder swept %d of 5 rows", n)
	}
	stale(1)
	if n, err := db.Sweeps().Fenced(job, "").RateLimits(ctx, t0, false); err != nil || n != 1 {
		t.Fatalf("an unfenced sweep removed %d, %v; want 1", n, err)
	}
}
