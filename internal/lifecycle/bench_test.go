package lifecycle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/store"
)

// benchUser inserts an account without hashing a password: the benchmark
// needs hundreds of them.
func benchUser(b *testing.B, srv *apitest.Server, n int) uuid.UUID {
	b.Helper()
	now := time.Now().UTC()
	id := uuid.New()
	u := &account.User{ID: id, Realm: account.RealmPlayer, Email: fmt.Sprintf("bench-%s@example.com", id), Name: "Bench",
		Nickname: fmt.Sprintf("bench_%d_%s", n, id.String()[:6]), PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		CreatedAt: now, UpdatedAt: now}
	if err := srv.App.DB.Accounts().InsertUser(b.Context(), u); err != nil {
		b.Fatal(err)
	}
	return id
}

// richPlayer gives a new account friends friendships, decks decks and a
// hosted lobby with a second member.
func richPlayer(b *testing.B, srv *apitest.Server, friends []uuid.UUID, decks int) uuid.UUID {
	b.Helper()
	ctx := b.Context()
	me := benchUser(b, srv, 0)
	err := srv.App.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		for _, f := range friends {
			if _, err := srv.App.Players.SeedRelationTx(ctx, tx, me, f, player.StateFriend); err != nil {
				return err
			}
		}
		now := time.Now().UTC()
		for i := range decks {
			d := &player.DeckRow{ID: uuid.New(), UserID: me, Name: fmt.Sprintf("deck %d", i), Code: fmt.Sprintf("bench-code-%d", i),
				Source: "import", CreatedAt: now, UpdatedAt: now}
			if err := tx.InsertDeck(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(friends) > 0 {
		res, err := srv.App.Players.CreateLobby(ctx, me, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic})
		if err != nil {
			b.Fatal(err)
		}
		member := benchUser(b, srv, 1)
		if _, err := srv.App.Players.JoinLobby(ctx, member, player.JoinLobbyInput{LobbyID: &res.Lobby.ID}); err != nil {
			b.Fatal(err)
		}
	}
	return me
}

// BenchmarkDelete measures the deletion transaction of a player with 200
// friends, 30 decks and a hosted lobby, against a bare account in the
// same run (the baseline): only the deletion is timed.
//
//	PLATFORM_TEST_DATABASE_URL=postgres://… go test ./internal/lifecycle -run '^$' -bench Delete -count 3
func BenchmarkDelete(b *testing.B) {
	srv := apitest.NewWithContent(b)
	friends := make([]uuid.UUID, 200)
	for i := range friends {
		friends[i] = benchUser(b, srv, i+2)
	}
	for _, bc := range []struct {
		name    string
		friends []uuid.UUID
		decks   int
	}{{"bare", nil, 0}, {"200-friends-30-decks-lobby", friends, 30}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				me := richPlayer(b, srv, bc.friends, bc.decks)
				b.StartTimer()
				if _, err := srv.App.Lifecycle.DeleteBySupport(b.Context(), "bench", account.RealmPlayer, me.String(), "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
