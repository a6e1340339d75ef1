package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

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

// loadPlayer is a player made for the run and its Cookie header.
type loadPlayer struct {
	ID     uuid.UUID
	Cookie string
}

// openApp opens the serve's database with the serve's settings.
func openApp(ctx context.Context, log *slog.Logger) (*app.App, error) {
	cfg, err := config.Load(os.Getenv, nil)
	if err != nil {
		return nil, err
	}
	a, err := app.New(ctx, cfg, log, platform.Build{Version: "eventload"})
	if err != nil {
		return nil, err
	}
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		a.Close()
		return nil, fmt.Errorf("fixtures: %v", ps)
	}
	if _, err := a.Seeder.Seed(ctx, set, seed.Options{}); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// makePlayers creates n players sharing one password hash, each signed in.
func makePlayers(ctx context.Context, a *app.App, n int) ([]loadPlayer, error) {
	hash, err := a.Accounts.HashPassword(ctx, "eventload-password")
	if err != nil {
		return nil, err
	}
	run := uuid.NewString()[:6]
	out := make([]loadPlayer, 0, n)
	for i := range n {
		now := time.Now().UTC().Truncate(time.Millisecond)
		u := &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: fmt.Sprintf("ev%d-%s@example.com", i, run),
			Name: fmt.Sprintf("Load %d", i), Nickname: fmt.Sprintf("ev%d_%s", i, run), PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
		if err := a.DB.Accounts().InsertUser(ctx, u); err != nil {
			return nil, err
		}
		p, err := a.Auth.OpenSession(ctx, u, true, auth.Client{UserAgent: "eventload"})
		if err != nil {
			return nil, err
		}
		var cookie []string
		for _, c := range a.Auth.Cookies().SessionCookies(account.RealmPlayer, p.Token, true) {
			cookie = append(cookie, (&http.Cookie{Name: c.Name, Value: c.Value}).String())
		}
		out = append(out, loadPlayer{ID: u.ID, Cookie: strings.Join(cookie, "; ")})
		if (i+1)%2000 == 0 {
			fmt.Fprintf(os.Stderr, "eventload: %d players ready\n", i+1)
		}
	}
	return out, nil
}

// makeLobbies opens a custom lobby per host and has the matching guest
// join it; it returns the lobby ids.
func makeLobbies(ctx context.Context, a *app.App, hosts, guests []loadPlayer) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, len(hosts))
	for i := range hosts {
		res, err := a.Players.CreateLobby(ctx, hosts[i].ID, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic})
		if err != nil {
			return nil, err
		}
		ids[i] = res.Lobby.ID
		if _, err := a.Players.JoinLobby(ctx, guests[i].ID, player.JoinLobbyInput{LobbyID: &ids[i]}); err != nil {
			return nil, err
		}
	}
	return ids, nil
}
