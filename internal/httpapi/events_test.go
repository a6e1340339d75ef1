package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/store"
)

// eventWait bounds how long a test waits for an event that must come; it
// only decides when a missing event fails the test.
const eventWait = 20 * time.Second

func openEvents(t *testing.T, c *apitest.Client) *apitest.Stream {
	t.Helper()
	s, res := c.OpenEvents("")
	if res != nil {
		t.Fatalf("open events: %d %s", res.Status, res.Body)
	}
	return s
}

func snapshotOf(t *testing.T, s *apitest.Stream) player.Snapshot {
	t.Helper()
	ev := s.Next(t, eventWait)
	if ev.Type != events.TypeSnapshot || ev.ID == "" {
		t.Fatalf("first event: %+v, want a snapshot with an id", ev)
	}
	var snap player.Snapshot
	ev.Decode(t, &snap)
	return snap
}

func lobbyUpdate(t *testing.T, s *apitest.Stream) player.LobbyUpdate {
	t.Helper()
	var u player.LobbyUpdate
	s.NextOf(t, events.TypeLobbyUpdated, eventWait).Decode(t, &u)
	return u
}

// lobbyChange skips lobby events until one of change. Across processes
// (PostgreSQL) the notice of an action taken just before the stream opened
// may still arrive after its snapshot.
func lobbyChange(t *testing.T, s *apitest.Stream, change string) player.LobbyUpdate {
	t.Helper()
	var u player.LobbyUpdate
	s.Until(t, eventWait, "a lobby "+change+" event", func(ev apitest.Event) bool {
		if ev.Type != events.TypeLobbyUpdated {
			return false
		}
		u = player.LobbyUpdate{}
		ev.Decode(t, &u)
		return u.Change == change
	})
	return u
}

// marker sends a friend request from a fresh player to p and returns that
// player: the social.updated it causes is the next event p may get, so
// anything p receives before it is an event p should not have had.
func marker(t *testing.T, srv *apitest.Server, p *apitest.Account) *apitest.Account {
	t.Helper()
	m := newPlayer(t, srv)
	act(t, m.Client, "request", p.User.Nickname)
	return m
}

// settle waits until every notice sent before now has reached p's
// stream: it sends a marker and skips events up to it. Across processes
// (PostgreSQL) notices of actions taken before a stream opened may still
// arrive after its snapshot.
func settle(t *testing.T, srv *apitest.Server, s *apitest.Stream, p *apitest.Account) {
	t.Helper()
	m := marker(t, srv, p)
	s.Until(t, eventWait, "the marker's friend request", func(ev apitest.Event) bool {
		return isMarker(t, ev, m)
	})
}

// isMarker reports whether ev is the social.updated of m's marker request.
func isMarker(t *testing.T, ev apitest.Event, m *apitest.Account) bool {
	t.Helper()
	if ev.Type != events.TypeSocialUpdated {
		return false
	}
	var u player.SocialUpdate
	ev.Decode(t, &u)
	return u.Player.ID == m.User.ID
}

func expectMarker(t *testing.T, s *apitest.Stream, from *apitest.Account) {
	t.Helper()
	ev := s.Next(t, eventWait)
	var u player.SocialUpdate
	if ev.Type == events.TypeSocialUpdated {
		ev.Decode(t, &u)
	}
	if u.Player.ID != from.User.ID || u.State != player.StateIncoming {
		t.Fatalf("got %s %s, want the marker request from %s", ev.Type, ev.Data, from.User.Nickname)
	}
}

func TestEventsNeedAPlayerSession(t *testing.T) {
	srv := newPlayerServer(t)
	_, res := srv.Client(t).OpenEvents("")
	expect(t, res, http.StatusUnauthorized, "UNAUTHORIZED")
	admin := srv.CreateAdmin(t)
	_, res = admin.Client.OpenEvents("")
	expect(t, res, http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestEventsStartWithASnapshotOnEveryConnect(t *testing.T) {
	srv := newPlayerServer(t)
	host := newPlayer(t, srv)
	l := createLobby(t, host.Client, "custom-hosted", player.VisibilityPublic)
	s := openEvents(t, host.Client)
	snapshotOf(t, s) // the retry line precedes the first event
	if s.Retry != "2000" {
		t.Fatalf("retry hint %q, want 2000", s.Retry)
	}
	s.Close()
	again, res := host.Client.OpenEvents("12345")
	if res != nil {
		t.Fatalf("reconnect: %d %s", res.Status, res.Body)
	}
	snap := snapshotOf(t, again)
	if snap.Lobby == nil || snap.Lobby.ID != l.ID || snap.Social == nil {
		t.Fatalf("snapshot after reconnect: %+v", snap)
	}
}

func TestLobbyEventsArriveInOrder(t *testing.T) {
	srv := newPlayerServer(t)
	host, guest := newPlayer(t, srv), newPlayer(t, srv)
	l := createLobby(t, host.Client, "custom-hosted", player.VisibilityPublic)
	s := openEvents(t, host.Client)
	snapshotOf(t, s)
	expect(t, call(t, guest.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID}), http.StatusOK, "")
	u := lobbyChange(t, s, player.LobbyChangeJoined)
	if u.Change != player.LobbyChangeJoined || u.Lobby == nil || u.Lobby.MemberCount != 2 || u.Lobby.Code == nil {
		t.Fatalf("join event: %+v", u)
	}
	const flips = 20
	for i := range flips {
		res := call(t, guest.Client, "POST", lobbyPath(l, "ready"), map[string]any{"ready": i%2 == 0})
		expect(t, res, http.StatusOK, "")
	}
	last := u.Lobby.UpdatedAt
	var ready bool
	for range flips {
		u := lobbyUpdate(t, s)
		if u.Change != player.LobbyChangeReady || u.Lobby.UpdatedAt.Before(last) {
			t.Fatalf("event out of order: %s at %s after %s", u.Change, u.Lobby.UpdatedAt, last)
		}
		last = u.Lobby.UpdatedAt
		ready = u.Lobby.Members[1].Ready
	}
	if ready != ((flips-1)%2 == 0) {
		t.Fatalf("the last event shows ready=%v, not the final state", ready)
	}
}

func TestNoLobbyEventsAfterLeaving(t *testing.T) {
	srv := newPlayerServer(t)
	host, guest, other := newPlayer(t, srv), newPlayer(t, srv), newPlayer(t, srv)
	l := createLobby(t, host.Client, "custom-hosted", player.VisibilityPublic)
	expect(t, call(t, guest.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID}), http.StatusOK, "")
	s := openEvents(t, guest.Client)
	if snap := snapshotOf(t, s); snap.Lobby == nil || snap.Lobby.ID != l.ID {
		t.Fatalf("snapshot: %+v", snap)
	}
	expect(t, call(t, host.Client, "POST", lobbyPath(l, "kick"), map[string]any{"playerId": guest.User.ID}), http.StatusOK, "")
	u := lobbyChange(t, s, player.LobbyChangeKicked)
	if u.Change != player.LobbyChangeKicked || u.Lobby != nil || u.LobbyID != l.ID {
		t.Fatalf("kick event: %+v", u)
	}
	// The lobby goes on without the guest, who hears nothing of it.
	expect(t, call(t, other.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID}), http.StatusOK, "")
	expect(t, call(t, other.Client, "POST", lobbyPath(l, "ready"), map[string]any{"ready": true}), http.StatusOK, "")
	expect(t, call(t, host.Client, "POST", lobbyPath(l, "close"), nil), http.StatusOK, "")
	expectMarker(t, s, marker(t, srv, guest))
}

func TestBlocksAreNeverSentToTheBlockedPlayer(t *testing.T) {
	srv := newPlayerServer(t)
	a, b := newPlayer(t, srv), newPlayer(t, srv)
	act(t, a.Client, "request", b.User.Nickname)
	act(t, b.Client, "accept", a.User.Nickname)
	sb := openEvents(t, b.Client)
	snapshotOf(t, sb)
	settle(t, srv, sb, b)
	sa := openEvents(t, a.Client)
	snapshotOf(t, sa)
	settle(t, srv, sa, a)

	act(t, a.Client, "block", b.User.Nickname)
	var u player.SocialUpdate
	sa.NextOf(t, events.TypeSocialUpdated, eventWait).Decode(t, &u)
	if u.Player.ID != b.User.ID || u.State != player.StateBlocked || u.Action != player.ActionBlock {
		t.Fatalf("the blocker's own event: %+v", u)
	}
	// b, blocked, tries to befriend a again: b sees only their own side,
	// a hears nothing of it, and b hears nothing of the block or unblock.
	act(t, b.Client, "request", a.User.Nickname)
	sb.Next(t, eventWait).Decode(t, &u)
	if u.Action != player.ActionRequest || u.Player.ID != a.User.ID || u.State != player.StateOutgoing {
		t.Fatalf("b's own request event: %+v", u)
	}
	act(t, a.Client, "unblock", b.User.Nickname)
	sa.Next(t, eventWait).Decode(t, &u)
	if u.Action != player.ActionUnblock || u.Player.ID != b.User.ID {
		t.Fatalf("a's next event after the block: %+v, want a's own unblock", u)
	}
	expectMarker(t, sb, marker(t, srv, b))

	// Without the block, a request and its acceptance reach both sides.
	act(t, a.Client, "request", b.User.Nickname)
	sb.NextOf(t, events.TypeSocialUpdated, eventWait).Decode(t, &u)
	if u.Player.ID != a.User.ID || u.State != player.StateIncoming || u.Action != player.ActionRequest {
		t.Fatalf("request event: %+v", u)
	}
}

func TestSessionEndedClosesTheStream(t *testing.T) {
	srv := newPlayerServer(t)
	p := newPlayer(t, srv)
	s := openEvents(t, p.Client)
	snapshotOf(t, s)
	res := call(t, p.Client, "POST", "/api/auth/player/revoke-sessions", map[string]any{})
	expect(t, res, http.StatusOK, "")
	var ended events.SessionEnded
	s.Next(t, eventWait).Decode(t, &ended)
	if ended.Reason != "revoked" {
		t.Fatalf("session.ended reason %q", ended.Reason)
	}
	s.Ended(t, eventWait)
}

func TestPasswordChangeEndsTheStream(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	s := openEvents(t, acc.Client)
	snapshotOf(t, s)
	res := acc.Client.Do("POST", "/api/profile/request-password-change",
		map[string]string{"currentPassword": apitest.DefaultPassword, "newPassword": "a brand new secret", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")
	m := waitMail(t, smtp, acc.User.Email, 1)
	if res, _ := confirm(t, srv.Client(t), m.Token()); res.Status != http.StatusOK {
		t.Fatalf("confirm: %d %s", res.Status, res.Body)
	}
	ev := s.Next(t, eventWait)
	var ended events.SessionEnded
	ev.Decode(t, &ended)
	if ev.Type != events.TypeSessionEnded || ended.Reason != "password_changed" {
		t.Fatalf("got %s %s", ev.Type, ev.Data)
	}
	s.Ended(t, eventWait)
}

func TestStreamCaps(t *testing.T) {
	srv := newPlayerServer(t, apitest.WithEnv("PLATFORM_EVENTS_PER_SESSION", "2"),
		apitest.WithEnv("PLATFORM_EVENTS_PER_PLAYER", "2"), apitest.WithEnv("PLATFORM_EVENTS_MAX_STREAMS", "3"))
	a, b := newPlayer(t, srv), newPlayer(t, srv)
	first := openEvents(t, a.Client)
	snapshotOf(t, first)
	second := openEvents(t, a.Client)
	snapshotOf(t, second)
	third := openEvents(t, a.Client) // past the per-session cap: the oldest goes
	snapshotOf(t, third)
	var closed events.StreamClosed
	ev := first.Next(t, eventWait)
	ev.Decode(t, &closed)
	if ev.Type != events.TypeStreamClosed || closed.Reason != events.ClosedReplaced {
		t.Fatalf("oldest stream got %s %s", ev.Type, ev.Data)
	}
	first.Ended(t, eventWait)
	openEvents(t, b.Client)
	_, res := b.Client.OpenEvents("") // past the process-wide cap
	expect(t, res, http.StatusServiceUnavailable, events.CodeTooManyStreams)
	if res.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	srv := newPlayerServer(t)
	p := newPlayer(t, srv)
	s := openEvents(t, p.Client)
	snapshotOf(t, s)
	srv.App.Events.Shutdown()
	var closed events.StreamClosed
	ev := s.Next(t, eventWait)
	ev.Decode(t, &closed)
	if ev.Type != events.TypeStreamClosed || closed.Reason != events.ClosedShutdown {
		t.Fatalf("got %s %s", ev.Type, ev.Data)
	}
	s.Ended(t, eventWait)
	_, res := p.Client.OpenEvents("")
	expect(t, res, http.StatusServiceUnavailable, events.CodeTooManyStreams)
}

func TestHeartbeatsKeepTheStreamOpenPastTheServerTimeouts(t *testing.T) {
	srv := newPlayerServer(t, apitest.WithEnv("PLATFORM_EVENTS_HEARTBEAT", "50ms"),
		apitest.WithEnv("PLATFORM_REQUEST_TIMEOUT", "1s"))
	p := newPlayer(t, srv)
	s := openEvents(t, p.Client)
	snapshotOf(t, s)
	// 30 heartbeats take at least 1.5s, beyond the request timeout; the
	// stream still delivers after them.
	start := time.Now()
	s.WaitHeartbeats(t, 30, eventWait)
	if time.Since(start) < time.Second {
		t.Fatalf("30 heartbeats 50ms apart came within %s", time.Since(start))
	}
	expectMarker(t, s, marker(t, srv, p))
}

// TestEventsCrossReplicas runs two API servers on one PostgreSQL database,
// each with its own listening connection: an action on one reaches a
// stream on the other.
func TestEventsCrossReplicas(t *testing.T) {
	srv := newPlayerServer(t)
	if srv.App.DB.Dialect() != store.Postgres {
		t.Skip("replicas share a database only on PostgreSQL; set PLATFORM_TEST_DATABASE_URL")
	}
	replica := apitest.New(t, apitest.WithEnv("PLATFORM_DATABASE_URL", srv.Config.DatabaseURL))
	<-replica.App.Events.Ready()
	host, guest := newPlayer(t, srv), newPlayer(t, srv)
	onReplica := replica.Client(t)
	onReplica.AddSession(&auth.Principal{Realm: account.RealmPlayer, Token: host.Token})
	s := openEvents(t, onReplica)
	snapshotOf(t, s)

	l := createLobby(t, host.Client, "custom-hosted", player.VisibilityPublic)
	if u := lobbyUpdate(t, s); u.Change != player.LobbyChangeCreated || u.Lobby == nil || u.Lobby.ID != l.ID {
		t.Fatalf("created event on the replica: %+v", u)
	}
	expect(t, call(t, guest.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID}), http.StatusOK, "")
	if u := lobbyChange(t, s, player.LobbyChangeJoined); u.Change != player.LobbyChangeJoined || u.Lobby.MemberCount != 2 {
		t.Fatalf("join event on the replica: %+v", u)
	}
	expect(t, call(t, host.Client, "POST", "/api/auth/player/sign-out", map[string]any{}), http.StatusOK, "")
	var ended events.SessionEnded
	ev := s.NextOf(t, events.TypeSessionEnded, eventWait)
	ev.Decode(t, &ended)
	if ended.Reason != "signed_out" {
		t.Fatalf("session.ended reason %q", ended.Reason)
	}
	s.Ended(t, eventWait)
}

// lobbyEventsBefore returns the lobby events s receives before the marker
// request from m.
func lobbyEventsBefore(t *testing.T, s *apitest.Stream, m *apitest.Account) []player.LobbyUpdate {
	t.Helper()
	var got []player.LobbyUpdate
	s.Until(t, eventWait, "the marker's friend request", func(ev apitest.Event) bool {
		if ev.Type == events.TypeLobbyUpdated {
			var u player.LobbyUpdate
			ev.Decode(t, &u)
			got = append(got, u)
		}
		return isMarker(t, ev, m)
	})
	return got
}

// TestEachLobbyChangeArrivesOnce: the serve that makes a lobby change
// sends it to its own streams at once, and the notice it publishes for the
// other replicas does not bring it a second time when it comes back.
func TestEachLobbyChangeArrivesOnce(t *testing.T) {
	srv := newPlayerServer(t)
	host, guest := newPlayer(t, srv), newPlayer(t, srv)
	l := createLobby(t, host.Client, "custom-hosted", player.VisibilityPublic)
	expect(t, call(t, guest.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID}), http.StatusOK, "")
	s := openEvents(t, host.Client)
	snapshotOf(t, s)
	settle(t, srv, s, host)
	const flips = 6
	for i := range flips {
		expect(t, call(t, guest.Client, "POST", lobbyPath(l, "ready"), map[string]any{"ready": i%2 == 0}), http.StatusOK, "")
	}
	got := lobbyEventsBefore(t, s, marker(t, srv, host))
	if len(got) != flips {
		t.Fatalf("%d lobby events for %d changes: %+v", len(got), flips, got)
	}
}

// TestLobbyOrderAcrossReplicas has two members act in turn on one lobby
// through two replicas, each watching the lobby on the other: both
// streams see the lobby's versions only grow, up to its final state.
func TestLobbyOrderAcrossReplicas(t *testing.T) {
	srv := newPlayerServer(t)
	if srv.App.DB.Dialect() != store.Postgres {
		t.Skip("replicas share a database only on PostgreSQL; set PLATFORM_TEST_DATABASE_URL")
	}
	replica := apitest.New(t, apitest.WithEnv("PLATFORM_DATABASE_URL", srv.Config.DatabaseURL))
	<-replica.App.Events.Ready()
	host, guest := newPlayer(t, srv), newPlayer(t, srv)
	l := createLobby(t, host.Client, "custom-hosted", player.VisibilityPublic)
	expect(t, call(t, guest.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID}), http.StatusOK, "")
	hostOnReplica, guestOnReplica := replica.Client(t), replica.Client(t)
	hostOnReplica.AddSession(&auth.Principal{Realm: account.RealmPlayer, Token: host.Token})
	guestOnReplica.AddSession(&auth.Principal{Realm: account.RealmPlayer, Token: guest.Token})
	streams := map[string]*apitest.Stream{"host's on the replica": openEvents(t, hostOnReplica), "guest's": openEvents(t, guest.Client)}
	for _, s := range streams {
		snapshotOf(t, s)
	}

	var final *player.Lobby
	for i := range 10 {
		for _, c := range []*apitest.Client{host.Client, guestOnReplica} {
			var out player.LobbyResult
			res := call(t, c, "POST", lobbyPath(l, "ready"), map[string]any{"ready": i%2 == 0})
			expect(t, res, http.StatusOK, "")
			res.Decode(t, &out)
			final = out.Lobby
		}
	}
	for name, s := range streams {
		var last time.Time
		for last.Before(final.UpdatedAt) {
			u := lobbyUpdate(t, s)
			if u.Lobby == nil || u.Lobby.UpdatedAt.Before(last) {
				t.Fatalf("%s stream: %s shows %+v after the lobby of %s", name, u.Change, u.Lobby, last)
			}
			last = u.Lobby.UpdatedAt
		}
		if !last.Equal(final.UpdatedAt) {
			t.Fatalf("%s stream went past the final lobby: %s, want %s", name, last, final.UpdatedAt)
		}
	}
}
