package player_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/playertest"
)

// TestSocialPagesStableUnderConcurrentRequests pages through a player's
// incoming requests three at a time while new requests keep arriving:
// every request that was there before paging began is seen exactly once,
// and the counts and the first page stay bounded.
func TestSocialPagesStableUnderConcurrentRequests(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	me := env.Player(t, "popular")
	var before []uuid.UUID
	for i := range 10 {
		p := env.Player(t, fmt.Sprintf("early%d", i))
		env.Clock.Advance(time.Millisecond)
		act(t, env, p, player.ActionRequest, me)
		before = append(before, p)
	}
	late := make([]uuid.UUID, 8)
	for i := range late {
		late[i] = env.Player(t, fmt.Sprintf("late%d", i))
	}

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, len(late))
	for _, p := range late {
		wg.Go(func() {
			<-start
			_, err := env.Players.Act(ctx, p, player.SocialActionInput{Action: player.ActionRequest, Target: me.String()})
			errs <- err
		})
	}
	limit := 3
	seen := map[uuid.UUID]int{}
	cursor := ""
	close(start)
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		s, err := env.Players.Social(ctx, me, player.SocialQuery{Limit: &limit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Incoming) > limit {
			t.Fatalf("page of %d entries, limit %d", len(s.Incoming), limit)
		}
		if cursor != "" && (len(s.Friends)+len(s.Outgoing)+len(s.Blocked) != 0) {
			t.Fatalf("a cursor of the incoming list also returned other lists: %+v", s)
		}
		for i, e := range s.Incoming {
			seen[e.Player.ID]++
			if i > 0 && e.Since.After(s.Incoming[i-1].Since) {
				t.Fatalf("page not newest first: %v after %v", e.Since, s.Incoming[i-1].Since)
			}
		}
		if cursor = s.NextCursor.Incoming; cursor == "" {
			break
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent request: %v", err)
		}
	}
	for _, p := range before {
		if seen[p] != 1 {
			t.Errorf("request from %s seen %d times, want once", p, seen[p])
		}
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("request from %s seen %d times", p, n)
		}
	}
	s, err := env.Players.Social(ctx, me, player.SocialQuery{Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts.Incoming != len(before)+len(late) || len(s.Incoming) != limit || s.NextCursor.Incoming == "" {
		t.Errorf("after the late requests: counts %+v, first page %d, next %q", s.Counts, len(s.Incoming), s.NextCursor.Incoming)
	}
}

// TestBadCursors checks that every cursor the server could not have
// given out is INVALID_CURSOR, on the social view and the lobby list, and
// that a cursor of one list is refused by the other.
func TestBadCursors(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	me := env.Player(t, "pager")
	for i := range 3 {
		act(t, env, env.Player(t, fmt.Sprintf("fan%d", i)), player.ActionRequest, me)
		host := env.Player(t, fmt.Sprintf("host%d", i))
		env.Clock.Advance(time.Millisecond)
		if _, err := env.Players.CreateLobby(ctx, host, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic}); err != nil {
			t.Fatal(err)
		}
	}
	one := 1
	social, err := env.Players.Social(ctx, me, player.SocialQuery{Limit: &one})
	if err != nil {
		t.Fatal(err)
	}
	lobbies, err := env.Players.Lobbies(ctx, me, player.LobbyQuery{Limit: &one})
	if err != nil {
		t.Fatal(err)
	}
	if social.NextCursor.Incoming == "" || lobbies.NextCursor == "" {
		t.Fatalf("no next cursors: social %+v, lobbies %q", social.NextCursor, lobbies.NextCursor)
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	raw, _ := base64.RawURLEncoding.DecodeString(social.NextCursor.Incoming)
	bad := []string{
		"not base64 !",
		enc("garbage"),
		enc("c1|incoming|12|not-a-uuid"),
		enc("c1|incoming|-5|" + uuid.NewString()),
		enc("c2|incoming|12|" + uuid.NewString()),
		enc("c1|nonsense|12|" + uuid.NewString()),
		enc(string(raw) + "|extra"),
		enc(strings.Replace(string(raw), "-", "", 1)),
		strings.Repeat("A", 500),
	}
	for _, c := range bad {
		_, err := env.Players.Social(ctx, me, player.SocialQuery{Cursor: c})
		wantCode(t, err, player.CodeInvalidCursor)
		_, err = env.Players.Lobbies(ctx, me, player.LobbyQuery{Cursor: c})
		wantCode(t, err, player.CodeInvalidCursor)
	}
	_, err = env.Players.Social(ctx, me, player.SocialQuery{Cursor: lobbies.NextCursor})
	wantCode(t, err, player.CodeInvalidCursor)
	_, err = env.Players.Lobbies(ctx, me, player.LobbyQuery{Cursor: social.NextCursor.Incoming})
	wantCode(t, err, player.CodeInvalidCursor)
	zero := 0
	_, err = env.Players.Social(ctx, me, player.SocialQuery{Limit: &zero})
	wantCode(t, err, "VALIDATION_ERROR")
}

// TestLobbyListCursor walks the lobby list one lobby at a time while new
// lobbies open: every lobby open before is listed once, newest first.
func TestLobbyListCursor(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	var open []uuid.UUID // newest first
	for i := range 5 {
		env.Clock.Advance(time.Millisecond)
		res, err := env.Players.CreateLobby(ctx, env.Player(t, fmt.Sprintf("host%d", i)), player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic})
		if err != nil {
			t.Fatal(err)
		}
		open = append([]uuid.UUID{res.Lobby.ID}, open...)
	}
	viewer := env.Player(t, "browser")
	var got []uuid.UUID
	cursor, two := "", 2
	for range 10 {
		list, err := env.Players.Lobbies(ctx, viewer, player.LobbyQuery{Limit: &two, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list.Lobbies {
			got = append(got, l.ID)
		}
		// A lobby opened meanwhile sorts before the cursor.
		env.Clock.Advance(time.Millisecond)
		if _, err := env.Players.CreateLobby(ctx, env.Player(t, "n"+uuid.NewString()[:8]), player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic}); err != nil {
			t.Fatal(err)
		}
		if cursor = list.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, open) {
		t.Errorf("paged %v, want %v", got, open)
	}
}

// TestIncomingRequestCap fills a player's waiting requests to the cap:
// the next request is SOCIAL_REQUESTS_FULL and changes nothing, and a
// decline makes room again.
func TestIncomingRequestCap(t *testing.T) {
	ctx := t.Context()
	limits := player.DefaultLimits
	limits.MaxIncomingRequests = 3
	env := playertest.New(t, playertest.Options{Limits: limits})
	star := env.Player(t, "star")
	var fans []uuid.UUID
	for i := range 4 {
		fans = append(fans, env.Player(t, fmt.Sprintf("fan%d", i)))
	}
	for _, f := range fans[:3] {
		act(t, env, f, player.ActionRequest, star)
	}
	_, err := env.Players.Act(ctx, fans[3], player.SocialActionInput{Action: player.ActionRequest, Target: star.String()})
	wantCode(t, err, player.CodeSocialRequestsFull)
	s, err := env.Players.Social(ctx, star, player.SocialQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts.Incoming != 3 || s.Limits.MaxIncomingRequests != 3 {
		t.Fatalf("after the refused request: counts %+v limits %+v", s.Counts, s.Limits)
	}
	act(t, env, star, player.ActionDecline, fans[0])
	act(t, env, fans[3], player.ActionRequest, star)
}
