package player_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/playertest"
	"github.com/towerdefence/platformctl/internal/storetest"
)

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := platform.ErrorCode(err); got != code {
		t.Fatalf("error %v (code %q), want %s", err, got, code)
	}
}

// TestStarterDecksOnceUnderConcurrentFirstAccess has a new player's first
// requests arrive together: the starter decks are given exactly once.
func TestStarterDecksOnceUnderConcurrentFirstAccess(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	p := env.Player(t, "newbie")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := env.Players.Decks(ctx, p)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := env.Players.Decks(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := env.Players.Catalog(ctx)
	if len(list.Decks) != len(cat.StarterDecks) || list.DefaultDeckID == nil {
		t.Fatalf("%d decks (want %d), default %v", len(list.Decks), len(cat.StarterDecks), list.DefaultDeckID)
	}
	for i, d := range list.Decks {
		if d.Name != cat.StarterDecks[i].Name || d.Code != cat.StarterDecks[i].Code || d.IsDefault != cat.StarterDecks[i].Default {
			t.Errorf("deck %d: %s %s default %v, want starter %+v", i, d.Name, d.Code, d.IsDefault, cat.StarterDecks[i])
		}
	}
}

func TestIdleLobbiesClose(t *testing.T) {
	ctx := t.Context()
	const idle = 10 * time.Minute
	env := playertest.New(t, playertest.Options{IdleTimeout: idle})
	host, guest, late := env.Player(t, "host"), env.Player(t, "guest"), env.Player(t, "late")
	res, err := env.Players.CreateLobby(ctx, host, player.CreateLobbyInput{Queue: "casual-short", Visibility: player.VisibilityPublic})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Lobby
	if _, err := env.Players.JoinLobby(ctx, guest, player.JoinLobbyInput{Code: *l.Code}); err != nil {
		t.Fatal(err)
	}
	// Activity keeps it open...
	env.Clock.Advance(idle - time.Minute)
	if _, err := env.Players.SetReady(ctx, guest, l.ID, true); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(idle - time.Minute)
	if cur, err := env.Players.CurrentLobby(ctx, host); err != nil || cur == nil {
		t.Fatalf("an active lobby closed: %v, %v", cur, err)
	}
	// ...and silence closes it: it leaves the list at once, refuses joins,
	// and frees its members to open another.
	env.Clock.Advance(2 * time.Minute)
	list, err := env.Players.Lobbies(ctx, late, player.LobbyQuery{Queue: "casual-short"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Lobbies {
		if s.ID == l.ID {
			t.Fatal("an idle lobby is listed")
		}
	}
	if cur, _ := env.Players.CurrentLobby(ctx, host); cur != nil {
		t.Fatalf("the host still sits in an idle lobby: %+v", cur)
	}
	_, err = env.Players.JoinLobby(ctx, late, player.JoinLobbyInput{LobbyID: &l.ID})
	wantCode(t, err, player.CodeLobbyClosed)
	if _, err := env.Players.CreateLobby(ctx, guest, player.CreateLobbyInput{Queue: "casual-long", Visibility: player.VisibilityPrivate}); err != nil {
		t.Fatalf("a member of an idle lobby cannot open a new one: %v", err)
	}

	// The janitor closes what nobody touched.
	other, err := env.Players.CreateLobby(ctx, late, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityFriends})
	if err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(idle)
	n, err := env.Players.CloseIdleLobbies(ctx)
	if err != nil || n != 2 { // late's lobby and guest's new one
		t.Fatalf("CloseIdleLobbies = %d, %v; want 2", n, err)
	}
	got, err := env.Players.Lobby(ctx, late, other.Lobby.ID)
	if err == nil {
		t.Fatalf("late can still see its closed friends lobby: %+v", got)
	}
	if n, err := env.Players.CloseIdleLobbies(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep closed %d, %v", n, err)
	}
	// A day later the closed lobbies are gone for good.
	count := func() int {
		t.Helper()
		return storetest.Count(t, env.DB, "SELECT COUNT(*) FROM lobbies")
	}
	before := count()
	env.Clock.Advance(player.ClosedLobbyRetention + time.Minute)
	if _, err := env.DB.Sweeps().ClosedLobbies(ctx, env.Clock.Now().Add(-player.ClosedLobbyRetention), false); err != nil {
		t.Fatal(err)
	}
	if after := count(); before != 3 || after != 0 {
		t.Fatalf("lobbies before the purge %d (want 3), after %d (want 0)", before, after)
	}
}

func TestDisabledQueuesAndFriendsLobbies(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	p := env.Player(t, "someone")
	_, err := env.Players.CreateLobby(ctx, p, player.CreateLobbyInput{Queue: "ranked-long", Visibility: player.VisibilityPublic})
	wantCode(t, err, player.CodeQueueDisabled)
	_, err = env.Players.CreateLobby(ctx, p, player.CreateLobbyInput{Queue: "nope", Visibility: "nope"})
	pe, _ := platform.As(err)
	if pe == nil || pe.Code != platform.CodeValidation || len(pe.Fields) != 2 {
		t.Fatalf("two bad fields: %v", err)
	}
}

// TestLobbyListPage checks the page of the lobby list: newest first, the
// size asked for, and never the caller's own lobby, wherever it falls.
func TestLobbyListPage(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	create := func(host uuid.UUID) uuid.UUID {
		t.Helper()
		env.Clock.Advance(time.Second)
		res, err := env.Players.CreateLobby(ctx, host, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic})
		if err != nil {
			t.Fatal(err)
		}
		return res.Lobby.ID
	}
	var lobbies []uuid.UUID // oldest first
	for i := range 4 {
		lobbies = append(lobbies, create(env.Player(t, "host"+string(rune('a'+i)))))
	}
	page := func(viewer uuid.UUID, limit int) ([]uuid.UUID, *uuid.UUID) {
		t.Helper()
		list, err := env.Players.Lobbies(ctx, viewer, player.LobbyQuery{Limit: &limit})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]uuid.UUID, len(list.Lobbies))
		for i, l := range list.Lobbies {
			ids[i] = l.ID
		}
		if list.Current == nil {
			return ids, nil
		}
		return ids, &list.Current.ID
	}
	check := func(name string, viewer uuid.UUID, limit int, want []uuid.UUID, current *uuid.UUID) {
		t.Helper()
		got, cur := page(viewer, limit)
		if !slices.Equal(got, want) {
			t.Errorf("%s, limit %d: listed %v, want %v", name, limit, got, want)
		}
		if (cur == nil) != (current == nil) || cur != nil && *cur != *current {
			t.Errorf("%s, limit %d: current %v, want %v", name, limit, cur, current)
		}
	}
	stranger := env.Player(t, "stranger")
	check("outsider", stranger, 2, []uuid.UUID{lobbies[3], lobbies[2]}, nil)
	check("outsider", stranger, 10, []uuid.UUID{lobbies[3], lobbies[2], lobbies[1], lobbies[0]}, nil)

	// The caller's lobby is the newest, then in the middle of the page.
	host := env.Player(t, "self")
	own := create(host)
	check("host of the newest", host, 2, []uuid.UUID{lobbies[3], lobbies[2]}, &own)
	check("host of the newest", host, 4, []uuid.UUID{lobbies[3], lobbies[2], lobbies[1], lobbies[0]}, &own)
	guest := env.Player(t, "guest")
	if _, err := env.Players.JoinLobby(ctx, guest, player.JoinLobbyInput{LobbyID: &lobbies[2]}); err != nil {
		t.Fatal(err)
	}
	check("member of the third newest", guest, 1, []uuid.UUID{own}, &lobbies[2])
	check("member of the third newest", guest, 3, []uuid.UUID{own, lobbies[3], lobbies[1]}, &lobbies[2])
	check("member of the third newest", guest, 5, []uuid.UUID{own, lobbies[3], lobbies[1], lobbies[0]}, &lobbies[2])
}

// TestListAgreesWithJoin checks that the SQL filter of the lobby list and
// the join rule agree, for every visibility and relationship.
func TestListAgreesWithJoin(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	relations := map[string]func(host, viewer uuid.UUID){
		"stranger": func(host, viewer uuid.UUID) {},
		"friend": func(host, viewer uuid.UUID) {
			act(t, env, viewer, player.ActionRequest, host)
			act(t, env, host, player.ActionAccept, viewer)
		},
		"requested":         func(host, viewer uuid.UUID) { act(t, env, viewer, player.ActionRequest, host) },
		"blocked by host":   func(host, viewer uuid.UUID) { act(t, env, host, player.ActionBlock, viewer) },
		"blocked by viewer": func(host, viewer uuid.UUID) { act(t, env, viewer, player.ActionBlock, host) },
	}
	n := 0
	for rel, setup := range relations {
		for _, vis := range player.LobbyVisibilities {
			n++
			host, viewer := env.Player(t, "h"+uuid.NewString()[:8]), env.Player(t, "v"+uuid.NewString()[:8])
			setup(host, viewer)
			res, err := env.Players.CreateLobby(ctx, host, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: vis})
			if err != nil {
				t.Fatal(err)
			}
			list, err := env.Players.Lobbies(ctx, viewer, player.LobbyQuery{Queue: "custom-hosted"})
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, l := range list.Lobbies {
				listed = listed || l.ID == res.Lobby.ID
			}
			_, err = env.Players.JoinLobby(ctx, viewer, player.JoinLobbyInput{LobbyID: &res.Lobby.ID})
			joined := err == nil
			if listed != joined {
				t.Errorf("%s, %s lobby: listed %v but join by id %v (%v)", rel, vis, listed, joined, err)
			}
			wantListed := vis == player.VisibilityPublic && rel != "blocked by host" && rel != "blocked by viewer" ||
				vis == player.VisibilityFriends && rel == "friend"
			if listed != wantListed {
				t.Errorf("%s, %s lobby: listed %v, want %v", rel, vis, listed, wantListed)
			}
			if joined {
				if _, err := env.Players.LeaveLobby(ctx, viewer, res.Lobby.ID); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := env.Players.CloseLobby(ctx, host, res.Lobby.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n != 15 {
		t.Fatalf("checked %d combinations", n)
	}
}

func act(t *testing.T, env *playertest.Env, from uuid.UUID, action string, to uuid.UUID) {
	t.Helper()
	if _, err := env.Players.Act(t.Context(), from, player.SocialActionInput{Action: action, Target: to.String()}); err != nil {
		t.Fatalf("%s: %v", action, err)
	}
}

// TestLobbyVersionGrowsWhenTheClockIsBehind changes a lobby from a process
// whose clock is behind the one that changed it last, as a replica's may
// be: its UpdatedAt still grows, as event streams order its states by it.
func TestLobbyVersionGrowsWhenTheClockIsBehind(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	host, guest := env.Player(t, "host"), env.Player(t, "guest")
	res, err := env.Players.CreateLobby(ctx, host, player.CreateLobbyInput{Queue: "casual-short", Visibility: player.VisibilityPublic})
	if err != nil {
		t.Fatal(err)
	}
	joined, err := env.Players.JoinLobby(ctx, guest, player.JoinLobbyInput{Code: *res.Lobby.Code})
	if err != nil {
		t.Fatal(err)
	}
	last := joined.Lobby.UpdatedAt
	env.Clock.Advance(-time.Minute)
	leave := func() (*player.Lobby, error) {
		if _, err := env.Players.LeaveLobby(ctx, guest, res.Lobby.ID); err != nil {
			return nil, err
		}
		return env.Players.CurrentLobby(ctx, host) // as stored
	}
	for i, change := range []func() (*player.Lobby, error){
		func() (*player.Lobby, error) { return lobbyOf(env.Players.SetReady(ctx, guest, res.Lobby.ID, true)) },
		func() (*player.Lobby, error) { return lobbyOf(env.Players.SetReady(ctx, host, res.Lobby.ID, true)) },
		leave,
	} {
		got, err := change()
		if err != nil || got == nil {
			t.Fatalf("change %d: %+v, %v", i, got, err)
		}
		if !got.UpdatedAt.After(last) {
			t.Fatalf("change %d: updatedAt %s, not after %s", i, got.UpdatedAt, last)
		}
		last = got.UpdatedAt
	}
}

func lobbyOf(r *player.LobbyResult, err error) (*player.Lobby, error) {
	if err != nil {
		return nil, err
	}
	return r.Lobby, nil
}
