package player_test

import (
	"testing"

	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/playertest"
)

// BenchmarkBootstrap measures the service side of GET /api/player/bootstrap
// for a player with friends, requests and a lobby, against the test
// database (PostgreSQL when PLATFORM_TEST_DATABASE_URL is set).
func BenchmarkBootstrap(b *testing.B) {
	ctx := b.Context()
	env := playertest.New(b, playertest.Options{})
	me := env.Player(b, "bencher")
	for i := range 12 {
		other := env.Player(b, "friend"+string(rune('a'+i)))
		if _, err := env.Players.Act(ctx, me, player.SocialActionInput{Action: player.ActionRequest, Target: other.String()}); err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := env.Players.Act(ctx, other, player.SocialActionInput{Action: player.ActionAccept, Target: me.String()}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := env.Players.CreateLobby(ctx, me, player.CreateLobbyInput{Queue: "casual-short", Visibility: player.VisibilityPublic}); err != nil {
		b.Fatal(err)
	}
	v := player.Viewer{ID: me}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := env.Players.Bootstrap(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLobbyList measures the service side of GET /api/player/lobbies
// with 40 open lobbies.
func BenchmarkLobbyList(b *testing.B) {
	ctx := b.Context()
	env := playertest.New(b, playertest.Options{})
	for i := range 40 {
		host := env.Player(b, "host"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if _, err := env.Players.CreateLobby(ctx, host, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic}); err != nil {
			b.Fatal(err)
		}
	}
	me := env.Player(b, "browser")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := env.Players.Lobbies(ctx, me, player.LobbyQuery{}); err != nil {
			b.Fatal(err)
		}
	}
}
