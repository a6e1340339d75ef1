package store_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// lookupUsers are accounts with every nullable column set and with none,
// for the raw road's hand-written scans.
func lookupUsers() []*account.User {
	now := time.Now().UTC().Truncate(time.Microsecond)
	image := "https://example.com/a.png"
	return []*account.User{
		{ID: uuid.New(), Realm: account.RealmPlayer, Email: "full@example.com", Name: "Full", Nickname: "Full_1",
			EmailVerified: true, Image: &image, Role: "support", PasswordHash: "$argon2id$x", CreatedAt: now, UpdatedAt: now.Add(time.Second)},
		{ID: uuid.New(), Realm: account.RealmAdmin, Email: "bare@example.com", Name: "Bare", IsAnonymous: true,
			CreatedAt: now, UpdatedAt: now},
	}
}

func insertUsers(tb testing.TB, db *store.DB, users []*account.User) {
	tb.Helper()
	err := db.InTx(tb.Context(), func(ctx context.Context, tx store.Tx) error {
		for _, u := range users {
			if err := tx.InsertUser(ctx, u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// The raw road's user lookup (sign-in's) reads an account exactly as the
// bun road's does, nullable columns included.
func TestUserByEmailMatchesUserByID(t *testing.T) {
	db := storetest.Open(t)
	users := lookupUsers()
	insertUsers(t, db, users)
	for _, u := range users {
		byEmail, err := db.Accounts().UserByEmail(t.Context(), u.Realm, u.Email)
		if err != nil {
			t.Fatalf("UserByEmail(%s): %v", u.Email, err)
		}
		byID, err := db.Accounts().UserByID(t.Context(), u.ID)
		if err != nil {
			t.Fatalf("UserByID(%s): %v", u.ID, err)
		}
		if diff := cmp.Diff(byID, byEmail); diff != "" {
			t.Errorf("%s: UserByEmail differs from UserByID (-id +email):\n%s", u.Email, diff)
		}
		if diff := cmp.Diff(u, byEmail); diff != "" {
			t.Errorf("%s: read back differs from written (-written +read):\n%s", u.Email, diff)
		}
	}
	if _, err := db.Accounts().UserByEmail(t.Context(), account.RealmAdmin, users[0].Email); err != account.ErrNotFound {
		t.Errorf("UserByEmail in the other realm = %v, want ErrNotFound", err)
	}
}

// BenchmarkSessionByTokenHash measures the raw road's session lookup, the
// database read behind every signed-in request the session cache misses.
func BenchmarkSessionByTokenHash(b *testing.B) {
	db := storetest.Open(b)
	users := lookupUsers()
	insertUsers(b, db, users)
	now := time.Now().UTC()
	sess := &auth.Session{ID: uuid.New(), TokenHash: sha256.Sum256([]byte("token")), UserID: users[0].ID,
		Realm: users[0].Realm, ExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
	if err := db.Sessions().InsertSession(b.Context(), sess); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := db.Sessions().SessionByTokenHash(b.Context(), sess.TokenHash); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUserByEmail measures the raw road's user lookup of sign-in.
func BenchmarkUserByEmail(b *testing.B) {
	db := storetest.Open(b)
	users := lookupUsers()
	insertUsers(b, db, users)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.Accounts().UserByEmail(b.Context(), users[0].Realm, users[0].Email); err != nil {
			b.Fatal(err)
		}
	}
}
