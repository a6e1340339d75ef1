package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/seed"
)

func createLobby(t *testing.T, c *apitest.Client, queue, visibility string) *player.Lobby {
	t.Helper()
	res := call(t, c, "POST", "/api/player/lobbies", map[string]any{"queue": queue, "visibility": visibility})
	expect(t, res, http.StatusCreated, "")
	var r player.LobbyResult
	res.Decode(t, &r)
	return r.Lobby
}

// queueCapacity is the lobby capacity the server gives a queue: the
// preset's largest party.
func queueCapacity(t *testing.T, srv *apitest.Server, queue string) int {
	t.Helper()
	for _, q := range srv.App.Queues {
		if q.ID == queue {
			return q.PartySize.Max
		}
	}
	t.Fatalf("no queue %s", queue)
	return 0
}

func lobbyPath(l *player.Lobby, action string) string {
	return "/api/player/lobbies/" + l.ID.String() + "/" + action
}

// listed returns the ids of the lobbies c may join.
func listed(t *testing.T, c *apitest.Client, query string) (ids []uuid.UUID, current *player.Lobby) {
	t.Helper()
	res := call(t, c, "GET", "/api/player/lobbies"+query, nil)
	expect(t, res, http.StatusOK, "")
	var list player.LobbyList
	res.Decode(t, &list)
	for _, l := range list.Lobbies {
		ids = append(ids, l.ID)
	}
	return ids, list.Current
}

func TestLobbyLifecycle(t *testing.T) {
	srv := newPlayerServer(t)
	host, friend, stranger, blocked := newPlayer(t, srv), newPlayer(t, srv), newPlayer(t, srv), newPlayer(t, srv)
	act(t, host.Client, "request", friend.User.Nickname)
	act(t, friend.Client, "accept", host.User.Nickname)
	act(t, host.Client, "block", blocked.User.Nickname)

	pub := createLobby(t, host.Client, "custom-hosted", "public")
	if pub.Code == nil || len(*pub.Code) != player.JoinCodeLen || pub.Capacity != queueCapacity(t, srv, "custom-hosted") || pub.MemberCount != 1 ||
		pub.Host.ID != host.User.ID || pub.Status != player.LobbyOpen || !pub.Members[0].Host {
		t.Fatalf("created lobby: %+v", pub)
	}
	if !cmp.Equal(pub.AllowedActions, []string{"leave", "ready", "kick", "start", "close"}) {
		t.Errorf("host's actions %v", pub.AllowedActions)
	}
	// One lobby at a time.
	expect(t, call(t, host.Client, "POST", "/api/player/lobbies", map[string]any{"queue": "casual-long", "visibility": "public"}), http.StatusConflict, player.CodeLobbyAlreadyMember)

	// Visibility: public to everyone but the blocked player, who cannot
	// tell it from a lobby that does not exist.
	for name, tt := range map[string]struct {
		c    *apitest.Client
		want bool
	}{"friend": {friend.Client, true}, "stranger": {stranger.Client, true}, "blocked": {blocked.Client, false}} {
		ids, _ := listed(t, tt.c, "?queue=custom-hosted")
		if slices.Contains(ids, pub.ID) != tt.want {
			t.Errorf("%s lists the public lobby: %v, want %v", name, !tt.want, tt.want)
		}
	}
	expect(t, call(t, blocked.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": pub.ID}), http.StatusNotFound, player.CodeLobbyNotFound)
	expect(t, call(t, blocked.Client, "GET", "/api/player/lobbies/"+pub.ID.String(), nil), http.StatusNotFound, player.CodeLobbyNotFound)

	// A stranger joins by id and sees no code... until they are in.
	res := call(t, stranger.Client, "GET", "/api/player/lobbies/"+pub.ID.String(), nil)
	expect(t, res, http.StatusOK, "")
	var seen player.Lobby
	res.Decode(t, &seen)
	if seen.Code != nil || !cmp.Equal(seen.AllowedActions, []string{"join"}) {
		t.Errorf("a non-member sees code %v, actions %v", seen.Code, seen.AllowedActions)
	}
	var joined player.LobbyResult
	res = call(t, stranger.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": pub.ID})
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &joined)
	if joined.Lobby.MemberCount != 2 || joined.Lobby.Code == nil || *joined.Lobby.Code != *pub.Code {
		t.Fatalf("after joining: %+v", joined.Lobby)
	}
	// Joining again changes nothing.
	res = call(t, stranger.Client, "POST", "/api/player/lobbies/join", map[string]any{"code": *pub.Code})
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &joined)
	if joined.Lobby.MemberCount != 2 {
		t.Fatalf("joining twice: %d members", joined.Lobby.MemberCount)
	}
	_, current := listed(t, stranger.Client, "")
	if current == nil || current.ID != pub.ID {
		t.Fatalf("stranger's current lobby %v", current)
	}

	// Start needs every other member ready.
	expect(t, call(t, stranger.Client, "POST", lobbyPath(pub, "start"), nil), http.StatusForbidden, player.CodeLobbyNotHost)
	expect(t, call(t, friend.Client, "POST", lobbyPath(pub, "ready"), map[string]any{"ready": true}), http.StatusForbidden, player.CodeLobbyNotMember)
	expect(t, call(t, host.Client, "POST", lobbyPath(pub, "start"), nil), http.StatusConflict, player.CodeLobbyNotReady)
	expect(t, stranger.Client.Do("POST", lobbyPath(pub, "ready"), map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, call(t, stranger.Client, "POST", lobbyPath(pub, "ready"), map[string]any{"ready": true}), http.StatusOK, "")

	// The host leaves: the stranger, who joined next, takes over.
	var after player.LobbyResult
	res = call(t, host.Client, "POST", lobbyPath(pub, "leave"), nil)
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &after)
	if after.Lobby != nil {
		t.Fatalf("the host still sees the lobby after leaving: %+v", after.Lobby)
	}
	expect(t, call(t, host.Client, "POST", lobbyPath(pub, "leave"), nil), http.StatusOK, "") // idempotent
	res = call(t, stranger.Client, "GET", "/api/player/lobbies/"+pub.ID.String(), nil)
	res.Decode(t, &seen)
	if seen.Host.ID != stranger.User.ID || seen.MemberCount != 1 || !seen.Members[0].Host {
		t.Fatalf("after the host left: %+v", seen)
	}
	res = call(t, stranger.Client, "POST", lobbyPath(pub, "start"), nil)
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &after)
	if after.Lobby.Status != player.LobbyStarted {
		t.Fatalf("started lobby %+v", after.Lobby)
	}
	expect(t, call(t, friend.Client, "POST", "/api/player/lobbies/join", map[string]any{"code": *pub.Code}), http.StatusConflict, player.CodeLobbyStarted)
	// The last one out closes it.
	expect(t, call(t, stranger.Client, "POST", lobbyPath(pub, "leave"), nil), http.StatusOK, "")
	expect(t, call(t, friend.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": pub.ID}), http.StatusConflict, player.CodeLobbyClosed)

	// Friends-only lobbies list to the host's friends only; private ones
	// never list and open only with their code.
	friends := createLobby(t, host.Client, "custom-hosted", "friends")
	if ids, _ := listed(t, friend.Client, "?queue=custom-hosted"); !slices.Contains(ids, friends.ID) {
		t.Error("a friend does not see a friends lobby")
	}
	if ids, _ := listed(t, stranger.Client, "?queue=custom-hosted"); slices.Contains(ids, friends.ID) {
		t.Error("a stranger sees a friends lobby")
	}
	expect(t, call(t, stranger.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": friends.ID}), http.StatusNotFound, player.CodeLobbyNotFound)
	expect(t, call(t, friend.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": friends.ID}), http.StatusOK, "")
	// Kick: host only, idempotent, never oneself.
	expect(t, call(t, friend.Client, "POST", lobbyPath(friends, "kick"), map[string]any{"playerId": host.User.ID}), http.StatusForbidden, player.CodeLobbyNotHost)
	expect(t, call(t, host.Client, "POST", lobbyPath(friends, "kick"), map[string]any{"playerId": host.User.ID}), http.StatusBadRequest, "VALIDATION_ERROR")
	res = call(t, host.Client, "POST", lobbyPath(friends, "kick"), map[string]any{"playerId": friend.User.ID})
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &after)
	if after.Lobby.MemberCount != 1 {
		t.Fatalf("after the kick: %+v", after.Lobby)
	}
	expect(t, call(t, host.Client, "POST", lobbyPath(friends, "kick"), map[string]any{"playerId": friend.User.ID}), http.StatusOK, "")
	if _, current := listed(t, friend.Client, ""); current != nil {
		t.Errorf("the kicked friend is still in %v", current.ID)
	}
	// Close: host only; members are out and the code is gone.
	res = call(t, host.Client, "POST", lobbyPath(friends, "close"), nil)
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &after)
	if after.Lobby != nil {
		t.Fatalf("closing left the host in %+v", after.Lobby)
	}
	expect(t, call(t, host.Client, "POST", lobbyPath(friends, "close"), nil), http.StatusOK, "")

	priv := createLobby(t, host.Client, "casual-long", "private")
	if ids, _ := listed(t, friend.Client, ""); slices.Contains(ids, priv.ID) {
		t.Error("a private lobby is listed")
	}
	expect(t, call(t, friend.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": priv.ID}), http.StatusNotFound, player.CodeLobbyNotFound)
	code := *priv.Code
	expect(t, call(t, friend.Client, "POST", "/api/player/lobbies/join", map[string]any{"code": code[:3] + "-" + code[3:]}), http.StatusOK, "")
	// The blocked player is shut out even with the code.
	expect(t, call(t, blocked.Client, "POST", "/api/player/lobbies/join", map[string]any{"code": code}), http.StatusNotFound, player.CodeLobbyNotFound)

	// Bad input.
	for _, body := range []map[string]any{{}, {"lobbyId": priv.ID, "code": code}, {"code": "ABC"}, {"code": "0OIL01"}, {"lobbyId": "nope"}} {
		expect(t, call(t, stranger.Client, "POST", "/api/player/lobbies/join", body), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	expect(t, call(t, stranger.Client, "POST", "/api/player/lobbies/join", map[string]any{"code": "ZZZZZZ"}), http.StatusNotFound, player.CodeLobbyNotFound)
	expect(t, call(t, stranger.Client, "POST", "/api/player/lobbies", map[string]any{"queue": "solo-endless", "visibility": "public"}), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, call(t, stranger.Client, "POST", "/api/player/lobbies", map[string]any{"queue": "casual-short", "visibility": "secret"}), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, call(t, stranger.Client, "GET", "/api/player/lobbies/not-a-uuid", nil), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, call(t, stranger.Client, "GET", "/api/player/lobbies/"+uuid.NewString(), nil), http.StatusNotFound, player.CodeLobbyNotFound)
	expect(t, call(t, stranger.Client, "POST", "/api/player/lobbies/"+uuid.NewString()+"/leave", nil), http.StatusNotFound, player.CodeLobbyNotFound)
	expect(t, call(t, stranger.Client, "GET", "/api/player/lobbies?limit=0", nil), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, call(t, stranger.Client, "GET", "/api/player/lobbies?limit=x", nil), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, call(t, stranger.Client, "GET", "/api/player/lobbies?queue=nope", nil), http.StatusBadRequest, "VALIDATION_ERROR")
}

// TestLobbyJoinRaceForTheLastSlots sends more players than there is room
// for at one lobby at once: exactly the free slots are filled.
func TestLobbyJoinRaceForTheLastSlots(t *testing.T) {
	srv := newPlayerServer(t)
	host := newPlayer(t, srv)
	l := createLobby(t, host.Client, "custom-hosted", "public")
	const racers = 12
	var players []*apitest.Account
	for range racers {
		players = append(players, newPlayer(t, srv))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make(chan string, racers)
	for _, p := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := p.Client.Do("POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID})
			results <- fmt.Sprintf("%d %s", res.Status, res.Code())
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	counts := map[string]int{}
	for r := range results {
		counts[r]++
	}
	want := map[string]int{"200 ": l.Capacity - 1, "409 " + player.CodeLobbyFull: racers - (l.Capacity - 1)}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Fatalf("racing joins (-want +got):\n%s", diff)
	}
	var seen player.Lobby
	call(t, host.Client, "GET", "/api/player/lobbies/"+l.ID.String(), nil).Decode(t, &seen)
	if seen.MemberCount != l.Capacity || len(seen.Members) != l.Capacity {
		t.Fatalf("lobby after the race: count %d, %d members", seen.MemberCount, len(seen.Members))
	}
}

// TestOneLobbyPerPlayerUnderRace has one player join several lobbies at
// once: exactly one join wins.
func TestOneLobbyPerPlayerUnderRace(t *testing.T) {
	srv := newPlayerServer(t)
	const lobbies = 6
	var ids []uuid.UUID
	for range lobbies {
		ids = append(ids, createLobby(t, newPlayer(t, srv).Client, "custom-hosted", "public").ID)
	}
	p := newPlayer(t, srv)
	var wg sync.WaitGroup
	results := make(chan string, lobbies)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := p.Client.Do("POST", "/api/player/lobbies/join", map[string]any{"lobbyId": id})
			results <- fmt.Sprintf("%d %s", res.Status, res.Code())
		}()
	}
	wg.Wait()
	close(results)
	counts := map[string]int{}
	for r := range results {
		counts[r]++
	}
	if diff := cmp.Diff(map[string]int{"200 ": 1, "409 " + player.CodeLobbyAlreadyMember: lobbies - 1}, counts); diff != "" {
		t.Fatalf("one player joining %d lobbies at once (-want +got):\n%s", lobbies, diff)
	}
}

// TestRankedLobbiesNeedValidDecks gives players a default deck that a
// balance patch then breaks.
func TestRankedLobbiesNeedValidDecks(t *testing.T) {
	srv := newPlayerServer(t)
	host, mate, newcomer := newPlayer(t, srv), newPlayer(t, srv), newPlayer(t, srv)
	code := deckCode(t, legal...) // holds a mortar
	for _, p := range []*apitest.Account{host, mate, newcomer} {
		expect(t, call(t, p.Client, "POST", "/api/player/decks/import", map[string]any{"code": code, "setDefault": true}), http.StatusCreated, "")
	}
	l := createLobby(t, host.Client, "ranked-long", "friends")
	expect(t, call(t, mate.Client, "POST", "/api/player/lobbies/join", map[string]any{"code": *l.Code}), http.StatusOK, "")
	expect(t, call(t, mate.Client, "POST", lobbyPath(l, "ready"), map[string]any{"ready": true}), http.StatusOK, "")

	republish(t, srv, seed.FileCatalog, "{id: mortar, numId: 5, name: Mortar, rarity: epic, cost: 5, deploys: {kind: tower, id: mortar}}",
		"{id: mortar, numId: 5, name: Mortar, rarity: epic, cost: 5, deploys: {kind: tower, id: mortar}, disabled: true}")
	res := call(t, host.Client, "POST", lobbyPath(l, "start"), nil)
	expect(t, res, http.StatusUnprocessableEntity, player.CodeLobbyDeckRequired)
	var body struct {
		Details struct {
			Players []string `json:"players"`
		} `json:"details"`
	}
	res.Decode(t, &body)
	if len(body.Details.Players) != 2 {
		t.Errorf("players without a valid deck: %v", body.Details.Players)
	}
	expect(t, call(t, newcomer.Client, "POST", "/api/player/lobbies", map[string]any{"queue": "ranked-short", "visibility": "private"}), http.StatusUnprocessableEntity, player.CodeLobbyDeckRequired)
	// A custom lobby does not care.
	createLobby(t, newcomer.Client, "custom-hosted", "private")
	// Back on a legal default, the host can ready up again.
	expect(t, call(t, host.Client, "POST", lobbyPath(l, "ready"), map[string]any{"ready": true}), http.StatusUnprocessableEntity, player.CodeLobbyDeckRequired)
	var decks player.DeckList
	call(t, host.Client, "GET", "/api/player/decks", nil).Decode(t, &decks)
	expect(t, call(t, host.Client, "POST", "/api/player/decks/default", map[string]any{"deckId": decks.Decks[0].ID}), http.StatusOK, "")
	expect(t, call(t, host.Client, "POST", lobbyPath(l, "ready"), map[string]any{"ready": true}), http.StatusOK, "")
}

// TestBlockHidesTheLobbyFromEveryRoute has a player who learnt the id of a
// lobby before a block: every lobby route answers as for a lobby that does
// not exist, whichever side blocked, while a member caught in the lobby by
// the block can still leave it.
func TestBlockHidesTheLobbyFromEveryRoute(t *testing.T) {
	srv := newPlayerServer(t)
	for _, blockerIsHost := range []bool{true, false} {
		host, other, member := newPlayer(t, srv), newPlayer(t, srv), newPlayer(t, srv)
		l := createLobby(t, host.Client, "custom-hosted", "public")
		expect(t, call(t, other.Client, "GET", "/api/player/lobbies/"+l.ID.String(), nil), http.StatusOK, "")
		expect(t, call(t, member.Client, "POST", "/api/player/lobbies/join", map[string]any{"lobbyId": l.ID}), http.StatusOK, "")
		if blockerIsHost {
			expect(t, act(t, host.Client, "block", other.User.Nickname), http.StatusOK, "")
			expect(t, act(t, host.Client, "block", member.User.Nickname), http.StatusOK, "")
		} else {
			expect(t, act(t, other.Client, "block", host.User.Nickname), http.StatusOK, "")
			expect(t, act(t, member.Client, "block", host.User.Nickname), http.StatusOK, "")
		}
		missing := &player.Lobby{LobbySummary: player.LobbySummary{ID: uuid.New()}}
		for _, target := range []*player.Lobby{l, missing} {
			for _, rt := range []struct {
				path string
				body any
			}{
				{lobbyPath(target, "ready"), map[string]any{"ready": true}},
				{lobbyPath(target, "kick"), map[string]any{"playerId": host.User.ID}},
				{lobbyPath(target, "start"), nil},
				{lobbyPath(target, "close"), nil},
				{lobbyPath(target, "leave"), nil},
			} {
				expect(t, call(t, other.Client, "POST", rt.path, rt.body), http.StatusNotFound, player.CodeLobbyNotFound)
			}
			expect(t, call(t, other.Client, "GET", "/api/player/lobbies/"+target.ID.String(), nil), http.StatusNotFound, player.CodeLobbyNotFound)
		}
		// The member the block caught inside still acts in it.
		expect(t, call(t, member.Client, "POST", lobbyPath(l, "ready"), map[string]any{"ready": true}), http.StatusOK, "")
		expect(t, call(t, member.Client, "POST", lobbyPath(l, "leave"), nil), http.StatusOK, "")
	}
}
