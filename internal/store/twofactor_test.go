package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// Unanswered sign-in challenges and passkey ceremonies are swept once
// expired, in batches; live ones stay.
func TestSweepExpiredFactorChallenges(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	user := sweepUser(t, db, now)
	f := db.Factors()
	for i := range 8 {
		expires := now.Add(-time.Minute)
		if i%2 == 0 {
			expires = now.Add(time.Minute)
		}
		if err := f.InsertChallenge(ctx, &auth.Challenge{TokenHash: auth.HashToken(uuid.NewString()), UserID: user,
			Realm: account.RealmPlayer, ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
		if err := f.InsertCeremony(ctx, &auth.Ceremony{TokenHash: auth.HashToken(uuid.NewString()), Kind: "authentication",
			Session: []byte("{}"), ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.Sweeps().WithBatch(sweepBatch).ExpiredFactorChallenges(ctx, now, false)
	if err != nil || n != 8 {
		t.Fatalf("swept %d (%v), want the 8 expired rows", n, err)
	}
	n, err = db.Sweeps().ExpiredFactorChallenges(ctx, now, true)
	if err != nil || n != 0 {
		t.Fatalf("a second sweep would remove %d (%v)", n, err)
	}
	if _, err := f.TakeCeremony(ctx, auth.HashToken("unknown")); !errors.Is(err, auth.ErrCeremonyNotFound) {
		t.Fatalf("an unknown ceremony: %v", err)
	}
}
