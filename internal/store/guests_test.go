package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// Only guests that own nothing and were inactive past the retention go;
// a guest with an imported deck, a friend, a recent session or a recent
// start stays, and so does every full account.
func TestSweepInactiveGuests(t *testing.T) {
	db := storetest.Open(t)
	sw := db.Sweeps().WithBatch(sweepBatch)
	now := time.Now().UTC().Truncate(time.Millisecond)
	old, cutoff := now.Add(-40*24*time.Hour), now.Add(-30*24*time.Hour)
	user := func(guest bool, at time.Time) uuid.UUID {
		t.Helper()
		id := uuid.New()
		u := &account.User{ID: id, Realm: account.RealmPlayer, Email: id.String() + "@anonymous.placeholder.invalid", Name: "Anonymous",
			Nickname: "guest-" + id.String()[:8], IsAnonymous: guest, CreatedAt: at, UpdatedAt: at}
		if err := db.Accounts().InsertUser(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		return id
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Bun().NewRaw(q, args...).Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var gone []uuid.UUID
	for range 7 { // more than two batches
		id := user(true, old)
		exec("INSERT INTO player_decks (id, user_id, name, code, source, created_at, updated_at) VALUES (?, ?, 'Starter', ?, 'starter', ?, ?)",
			uuid.New(), id, "S"+id.String()[:8], old, old)
		gone = append(gone, id)
	}
	kept := []uuid.UUID{user(true, now.Add(-time.Hour)), user(false, old)}
	withDeck := user(true, old)
	exec("INSERT INTO player_decks (id, user_id, name, code, source, created_at, updated_at) VALUES (?, ?, 'Mine', 'ABC', 'import', ?, ?)",
		uuid.New(), withDeck, old, old)
	friend, other := user(true, old), user(false, old)
	exec("INSERT INTO social_edges (user_id, other_id, state, since) VALUES (?, ?, 'incoming', ?)", other, friend, old)
	active := user(true, old)
	sess := &auth.Session{ID: uuid.New(), TokenHash: auth.HashToken(active.String()), UserID: active, Realm: account.RealmPlayer,
		ExpiresAt: now.Add(time.Hour), CreatedAt: old, UpdatedAt: now.Add(-time.Hour)}
	if err := db.Sessions().InsertSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, withDeck, friend, other, active)

	count := func() int {
		n, err := db.Bun().NewSelect().Table("users").Count(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	sweepTwice(t, "inactive guests", len(gone), count, func(ctx context.Context, dry bool) (int, error) {
		return sw.InactiveGuests(ctx, cutoff, dry)
	})
	for _, id := range kept {
		if _, err := db.Accounts().UserByID(t.Context(), id); err != nil {
			t.Errorf("user %s was swept: %v", id, err)
		}
	}
	for _, id := range gone {
		if _, err := db.Accounts().UserByID(t.Context(), id); err == nil {
			t.Errorf("guest %s is still there", id)
		}
		n, err := db.Bun().NewSelect().Table("player_decks").Where("user_id = ?", id).Count(t.Context())
		if err != nil || n != 0 {
			t.Errorf("guest %s left %d decks (%v)", id, n, err)
		}
	}
}
