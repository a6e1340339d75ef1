// Command benchdata prepares a database for load runs of the player
// routes: it seeds the fixtures, creates players with friends, requests
// and lobbies, signs one of them in and prints that player's Cookie header
// for wrk or hey. It reads the same PLATFORM_* settings as serve, so run it
// with the serve's database URL and secret.
//
//	PLATFORM_DATABASE_URL=postgres://… PLATFORM_SECRET=… go run ./scripts/benchdata -players 300 -lobbies 150
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/seed"
)

func main() {
	players := flag.Int("players", 300, "players to create")
	lobbies := flag.Int("lobbies", 150, "public and friends lobbies to open (at most players/2)")
	flag.Parse()
	if err := run(context.Background(), *players, *lobbies); err != nil {
		fmt.Fprintln(os.Stderr, "benchdata:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n, lobbies int) error {
	cfg, err := config.Load(os.Getenv, map[string]string{"migrate": "true"})
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(ctx, cfg, log, platform.Build{Version: "bench"})
	if err != nil {
		return err
	}
	defer a.Close()
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		return fmt.Errorf("fixtures: %v", ps)
	}
	if _, err := a.Seeder.Seed(ctx, set, seed.Options{}); err != nil {
		return err
	}
	hash, err := a.Accounts.HashPassword(ctx, "bench-password")
	if err != nil {
		return err
	}
	ids := make([]*account.User, n)
	run := os.Getpid()
	for i := range ids {
		now := a.Now().UTC()
		u := &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: fmt.Sprintf("bench%d-%d@example.test", run, i),
			Name: fmt.Sprintf("Bench %d", i), Nickname: fmt.Sprintf("b%d_%d", run, i), PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
		if err := a.DB.Accounts().InsertUser(ctx, u); err != nil {
			return err
		}
		ids[i] = u
	}
	me := ids[0]
	// The measured player has 20 friends, 5 requests each way, an imported
	// deck and sits in a lobby: a bootstrap with something in every part.
	for i := 1; i <= 30; i++ {
		other := ids[i].ID.String()
		if _, err := a.Players.Act(ctx, me.ID, player.SocialActionInput{Action: player.ActionRequest, Target: other}); err != nil {
			return err
		}
		if i <= 20 {
			if _, err := a.Players.Act(ctx, ids[i].ID, player.SocialActionInput{Action: player.ActionAccept, Target: me.ID.String()}); err != nil {
				return err
			}
		}
	}
	for i := 31; i <= 35; i++ {
		if _, err := a.Players.Act(ctx, ids[i].ID, player.SocialActionInput{Action: player.ActionRequest, Target: me.ID.String()}); err != nil {
			return err
		}
	}
	if _, err := a.Players.ImportDeck(ctx, me.ID, player.ImportDeckInput{Code: "TD1042G40G20C0G6S03CG1W7E0J20", Name: "Bench"}); err != nil {
		return err
	}
	// Lobbies hosted by others, public and friends-only, then one for me.
	for i := 0; i < lobbies && 40+i < n; i++ {
		vis := player.VisibilityPublic
		if i%3 == 0 {
			vis = player.VisibilityFriends
		}
		queue := []string{"custom-hosted", "casual-long"}[i%2]
		if _, err := a.Players.CreateLobby(ctx, ids[40+i].ID, player.CreateLobbyInput{Queue: queue, Visibility: vis}); err != nil {
			return err
		}
	}
	if _, err := a.Players.CreateLobby(ctx, me.ID, player.CreateLobbyInput{Queue: "casual-short", Visibility: player.VisibilityFriends}); err != nil {
		return err
	}
	p, err := a.Auth.OpenSession(ctx, me, true, auth.Client{UserAgent: "benchdata"})
	if err != nil {
		return err
	}
	c := a.Auth.Cookies().SessionCookies(account.RealmPlayer, p.Token, true)[0]
	fmt.Printf("%s=%s\n", c.Name, c.Value)
	return nil
}
