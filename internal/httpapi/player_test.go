package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/seed"
)

func TestPlayerRoutesNeedAPlayerSession(t *testing.T) {
	srv := newPlayerServer(t)
	anonymous := srv.Client(t)
	admin := srv.CreateAdmin(t).Client
	lobby := "/api/player/lobbies/0b7a4c8e-2f5d-4a51-9f3e-3c1d2b4a5e6f"
	routes := []struct{ method, path string }{
		{"GET", "/api/player/bootstrap"},
		{"GET", "/api/player/decks"},
		{"POST", "/api/player/decks/import"},
		{"POST", "/api/player/decks/default"},
		{"GET", "/api/player/social"},
		{"POST", "/api/player/social/actions"},
		{"GET", "/api/player/lobbies"},
		{"POST", "/api/player/lobbies"},
		{"POST", "/api/player/lobbies/join"},
		{"GET", lobby},
		{"POST", lobby + "/leave"},
		{"POST", lobby + "/ready"},
		{"POST", lobby + "/kick"},
		{"POST", lobby + "/start"},
		{"POST", lobby + "/close"},
	}
	for _, rt := range routes {
		for name, c := range map[string]*apitest.Client{"anonymous": anonymous, "admin": admin} {
			t.Run(name+" "+rt.method+" "+rt.path, func(t *testing.T) {
				expect(t, c.Do(rt.method, rt.path, map[string]any{}), http.StatusUnauthorized, "UNAUTHORIZED")
			})
		}
	}
	// The catalog is anonymous.
	expect(t, anonymous.Do("GET", "/api/content/catalog", nil), http.StatusOK, "")
}

func TestCatalogETag(t *testing.T) {
	srv := newPlayerServer(t)
	c := srv.Client(t)
	res := call(t, c, "GET", "/api/content/catalog", nil)
	expect(t, res, http.StatusOK, "")
	var cat player.Catalog
	res.Decode(t, &cat)
	etag := res.Header.Get("ETag")
	if etag == "" || etag != cat.ETag || cat.Version < 1 || len(cat.Cards) == 0 || len(cat.StarterDecks) == 0 {
		t.Fatalf("catalog: etag header %q, body etag %q, version %d, %d cards", etag, cat.ETag, cat.Version, len(cat.Cards))
	}
	for _, tt := range []struct {
		ifNoneMatch string
		status      int
	}{
		{etag, http.StatusNotModified},
		{"W/" + etag, http.StatusNotModified},
		{`"other", ` + etag, http.StatusNotModified},
		{"*", http.StatusNotModified},
		{`"catalog-0-stale"`, http.StatusOK},
	} {
		c.Header.Set("If-None-Match", tt.ifNoneMatch)
		res := c.Do("GET", "/api/content/catalog", nil)
		if res.Status != tt.status || (tt.status == http.StatusNotModified && (len(res.Body) != 0 || res.Header.Get("ETag") != etag)) {
			t.Errorf("If-None-Match %s: %d with %d bytes and ETag %q, want %d", tt.ifNoneMatch, res.Status, len(res.Body), res.Header.Get("ETag"), tt.status)
		}
	}
}

// republish seeds the embedded content with edit applied to one file, to
// play a balance patch.
func republish(t *testing.T, srv *apitest.Server, file, old, new string) {
	t.Helper()
	set, ps := seed.Load(editedFixtures(t, file, old, new))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	set.World = nil
	report, err := srv.App.Seeder.Seed(t.Context(), set, seed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if report.Items[0].Action != seed.ActionPublished {
		t.Fatalf("the edited catalog was not published: %+v", report.Items[0])
	}
}

func deckCode(t *testing.T, cards ...player.CardCount) string {
	t.Helper()
	code, err := player.EncodeDeck(cards)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// A legal 14-card deck: arrow-tower 3, cannon 2, tesla-coil 2, mortar 1,
// spike-field 3, goblin-pack 3.
var legal = []player.CardCount{{NumID: 1, Count: 3}, {NumID: 2, Count: 2}, {NumID: 4, Count: 2}, {NumID: 5, Count: 1}, {NumID: 101, Count: 3}, {NumID: 201, Count: 3}}

func TestDecks(t *testing.T) {
	srv := newPlayerServer(t)
	p := newPlayer(t, srv).Client

	var list player.DeckList
	res := call(t, p, "GET", "/api/player/decks", nil)
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &list)
	if len(list.Decks) != 3 || list.DefaultDeckID == nil || !list.DefaultValid || list.Limits.MaxDecks != player.DefaultLimits.MaxDecks {
		t.Fatalf("a new player's decks: %+v", list)
	}
	for _, d := range list.Decks {
		if d.Source != player.SourceStarter || !d.Valid || len(d.Problems) != 0 || d.IsDefault != (d.ID == *list.DefaultDeckID) {
			t.Errorf("starter deck %+v", d)
		}
	}

	code := deckCode(t, legal...)
	spelled := strings.ToLower(code[:5]) + "-" + code[5:]
	var imported player.ImportDeckResult
	res = call(t, p, "POST", "/api/player/decks/import", map[string]any{"code": spelled, "name": " Tesla Rush "})
	expect(t, res, http.StatusCreated, "")
	res.Decode(t, &imported)
	if imported.Duplicate || imported.Deck.Code != code || imported.Deck.Name != "Tesla Rush" || imported.Deck.Size != 14 ||
		!imported.Deck.Valid || imported.Deck.IsDefault || *imported.DefaultDeckID != *list.DefaultDeckID {
		t.Fatalf("imported: %+v", imported)
	}
	// The same deck again: not stored twice, but setDefault still applies.
	var again player.ImportDeckResult
	res = call(t, p, "POST", "/api/player/decks/import", map[string]any{"code": code, "setDefault": true})
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &again)
	if !again.Duplicate || again.Deck.ID != imported.Deck.ID || !again.Deck.IsDefault || *again.DefaultDeckID != imported.Deck.ID {
		t.Fatalf("re-import: %+v", again)
	}
	res = call(t, p, "GET", "/api/player/decks", nil)
	res.Decode(t, &list)
	if len(list.Decks) != 4 || *list.DefaultDeckID != imported.Deck.ID {
		t.Fatalf("after import: %d decks, default %v", len(list.Decks), list.DefaultDeckID)
	}

	// Every way a code can be wrong says exactly what is wrong.
	corrupt := []byte(code)
	corrupt[6] = map[bool]byte{true: 'A', false: 'B'}[corrupt[6] != 'A']
	for _, tt := range []struct {
		name, code string
		status     int
		errCode    string
		detail     string
	}{
		{"malformed", "hello world", 400, player.CodeDeckCodeInvalid, player.DeckCodeMalformed},
		{"bad checksum", string(corrupt), 400, player.CodeDeckCodeInvalid, player.DeckCodeBadChecksum},
		{"unsupported version", "TD2" + code[3:], 400, player.CodeDeckCodeInvalid, player.DeckCodeUnsupportedVersion},
		{"unknown card", deckCode(t, append([]player.CardCount{{NumID: 999, Count: 1}}, legal...)...), 422, player.CodeDeckInvalid, player.ProblemUnknownCard},
		{"too many copies", deckCode(t, player.CardCount{NumID: 1, Count: 4}, player.CardCount{NumID: 2, Count: 3}, player.CardCount{NumID: 7, Count: 3}, player.CardCount{NumID: 101, Count: 3}), 422, player.CodeDeckInvalid, player.ProblemTooManyCopies},
		{"wrong size", deckCode(t, player.CardCount{NumID: 1, Count: 3}), 422, player.CodeDeckInvalid, player.ProblemWrongSize},
		{"missing", "", 400, "VALIDATION_ERROR", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, p, "POST", "/api/player/decks/import", map[string]any{"code": tt.code})
			expect(t, res, tt.status, tt.errCode)
			var body struct {
				Details struct {
					Reason   string               `json:"reason"`
					Problems []player.DeckProblem `json:"problems"`
				} `json:"details"`
			}
			res.Decode(t, &body)
			switch {
			case tt.errCode == player.CodeDeckCodeInvalid && body.Details.Reason != tt.detail:
				t.Errorf("reason %q, want %q", body.Details.Reason, tt.detail)
			case tt.errCode == player.CodeDeckInvalid && (len(body.Details.Problems) == 0 || body.Details.Problems[0].Code != tt.detail):
				t.Errorf("problems %+v, want %s first", body.Details.Problems, tt.detail)
			}
		})
	}
	expect(t, p.Do("POST", "/api/player/decks/import", `{"code": 7}`), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, p.Do("POST", "/api/player/decks/import", `{"code":`), http.StatusBadRequest, "INVALID_JSON")
	expect(t, p.Do("POST", "/api/player/decks/import", map[string]any{"code": code, "name": strings.Repeat("x", 41)}), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, p.Do("POST", "/api/player/decks/import", map[string]any{"code": code, "name": "tab\there"}), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, p.Do("POST", "/api/player/decks/import", map[string]any{"code": strings.Repeat("A", 2<<20)}), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")

	// Default selection.
	starter := list.Decks[0].ID
	var def player.DefaultDeckResult
	res = call(t, p, "POST", "/api/player/decks/default", map[string]any{"deckId": starter})
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &def)
	if def.DefaultDeckID != starter || !def.Deck.IsDefault {
		t.Fatalf("default: %+v", def)
	}
	other := newPlayer(t, srv).Client
	expect(t, call(t, other, "POST", "/api/player/decks/default", map[string]any{"deckId": starter}), http.StatusNotFound, player.CodeDeckNotFound)
	expect(t, p.Do("POST", "/api/player/decks/default", map[string]any{"deckId": "not-a-uuid"}), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, p.Do("POST", "/api/player/decks/default", map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")

	// A balance patch that disables the mortar breaks the imported deck:
	// it is kept, flagged with the reason, and cannot be the default.
	republish(t, srv, seed.FileCatalog, "{id: mortar, numId: 5, name: Mortar, rarity: epic, cost: 5, deploys: {kind: tower, id: mortar}}",
		"{id: mortar, numId: 5, name: Mortar, rarity: epic, cost: 5, deploys: {kind: tower, id: mortar}, disabled: true, disabledReason: under review}")
	res = call(t, p, "GET", "/api/player/decks", nil)
	res.Decode(t, &list)
	var broken *player.Deck
	for i := range list.Decks {
		if list.Decks[i].ID == imported.Deck.ID {
			broken = &list.Decks[i]
		}
	}
	if broken == nil || broken.Valid || len(broken.Problems) != 1 || broken.Problems[0].Code != player.ProblemCardDisabled || broken.Problems[0].CardID != "mortar" {
		t.Fatalf("the patched deck: %+v", broken)
	}
	if list.CatalogVersion < 2 {
		t.Errorf("catalog version %d after a patch", list.CatalogVersion)
	}
	expect(t, call(t, p, "POST", "/api/player/decks/default", map[string]any{"deckId": broken.ID}), http.StatusUnprocessableEntity, player.CodeDeckInvalid)
	expect(t, call(t, p, "POST", "/api/player/decks/import", map[string]any{"code": code}), http.StatusUnprocessableEntity, player.CodeDeckInvalid)
}

func TestDeckLimit(t *testing.T) {
	srv := newPlayerServer(t)
	p := newPlayer(t, srv).Client
	// Starter decks plus distinct legal decks up to the limit: vary the
	// counts of four commons and top up with two more to a legal size.
	want := player.DefaultLimits.MaxDecks - 3
	imported := 0
	for n := 0; n < 81 && imported < want; n++ {
		a, b, c, d := 1+n%3, 1+n/3%3, 1+n/9%3, 1+n/27%3
		rest := 14 - (a + b + c + d)
		if rest < 2 || rest > 6 {
			continue
		}
		x := min(3, rest-1)
		deck := []player.CardCount{{NumID: 1, Count: a}, {NumID: 2, Count: b}, {NumID: 7, Count: c}, {NumID: 101, Count: d}, {NumID: 102, Count: x}, {NumID: 201, Count: rest - x}}
		expect(t, call(t, p, "POST", "/api/player/decks/import", map[string]any{"code": deckCode(t, deck...)}), http.StatusCreated, "")
		imported++
	}
	if imported != want {
		t.Fatalf("imported %d decks, want %d", imported, want)
	}
	one := deckCode(t, legal...)
	expect(t, call(t, p, "POST", "/api/player/decks/import", map[string]any{"code": one}), http.StatusConflict, player.CodeDeckLimitReached)
}

// mirror is what the other player sees of a relationship.
var mirror = map[string]string{
	player.StateNone: player.StateNone, player.StateOutgoing: player.StateIncoming, player.StateIncoming: player.StateOutgoing,
	player.StateFriend: player.StateFriend, player.StateBlocked: player.StateNone,
}

// stateOf returns how viewer sees other, from viewer's social graph.
func stateOf(t *testing.T, viewer *apitest.Client, other string) string {
	t.Helper()
	var s player.Social
	res := call(t, viewer, "GET", "/api/player/social", nil)
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &s)
	for state, entries := range map[string][]player.SocialEntry{player.StateFriend: s.Friends, player.StateIncoming: s.Incoming,
		player.StateOutgoing: s.Outgoing, player.StateBlocked: s.Blocked} {
		for _, e := range entries {
			if e.Player.ID.String() == other {
				if diff := cmp.Diff(player.AllowedActions(state), e.AllowedActions); diff != "" {
					t.Errorf("allowed actions in %s: %s", state, diff)
				}
				return state
			}
		}
	}
	return player.StateNone
}

func act(t *testing.T, c *apitest.Client, action, target string) *apitest.Response {
	t.Helper()
	return call(t, c, "POST", "/api/player/social/actions", map[string]any{"action": action, "target": target})
}

// TestSocialStateMachine plays every action from every state, seen from
// the actor (a) and from the target (b), including the state a block by
// the target hides from the actor.
func TestSocialStateMachine(t *testing.T) {
	srv := newPlayerServer(t)
	setups := map[string]func(a, b *apitest.Account){
		"none":     func(a, b *apitest.Account) {},
		"outgoing": func(a, b *apitest.Account) { act(t, a.Client, "request", b.User.Nickname) },
		"incoming": func(a, b *apitest.Account) { act(t, b.Client, "request", a.User.Nickname) },
		"friend": func(a, b *apitest.Account) {
			act(t, a.Client, "request", b.User.Nickname)
			act(t, b.Client, "accept", a.User.Nickname)
		},
		"blocked": func(a, b *apitest.Account) { act(t, a.Client, "block", b.User.Nickname) },
		// b blocked a: a must see exactly what "none" shows.
		"none, blocked by the target": func(a, b *apitest.Account) { act(t, b.Client, "block", a.User.Nickname) },
	}
	a := newPlayer(t, srv)
	for setupName, setup := range setups {
		from := setupName
		hiddenBlock := false
		if strings.HasPrefix(setupName, "none,") {
			from, hiddenBlock = player.StateNone, true
		}
		for i, action := range player.SocialActions {
			t.Run(setupName+"/"+action, func(t *testing.T) {
				b := newPlayer(t, srv)
				setup(a, b)
				if got := stateOf(t, a.Client, b.User.ID.String()); got != from {
					t.Fatalf("setup: a sees %s, want %s", got, from)
				}
				target := b.User.Nickname
				if i%2 == 1 {
					target = b.User.ID.String()
				}
				res := act(t, a.Client, action, target)
				want, ok := nextState(action, from)
				if !ok {
					expect(t, res, http.StatusConflict, player.CodeSocialInvalidTransition)
					var body struct {
						Details struct {
							State          string   `json:"state"`
							AllowedActions []string `json:"allowedActions"`
						} `json:"details"`
					}
					res.Decode(t, &body)
					if body.Details.State != from || !cmp.Equal(body.Details.AllowedActions, player.AllowedActions(from)) {
						t.Errorf("details %+v", body.Details)
					}
				} else {
					expect(t, res, http.StatusOK, "")
					var r player.SocialActionResult
					res.Decode(t, &r)
					if r.PreviousState != from || r.State != want || r.Changed != (want != from) || r.Target.ID != b.User.ID || r.Action != action {
						t.Fatalf("result %+v, want %s -> %s", r, from, want)
					}
					// Idempotent: the same action again changes nothing.
					res = act(t, a.Client, action, target)
					expect(t, res, http.StatusOK, "")
					res.Decode(t, &r)
					if r.PreviousState != want || r.State != want || r.Changed {
						t.Fatalf("repeat: %+v, want %s unchanged", r, want)
					}
				}
				now := from
				if ok {
					now = want
				}
				if got := stateOf(t, a.Client, b.User.ID.String()); got != now {
					t.Errorf("a sees %s, want %s", got, now)
				}
				wantB := mirror[now]
				if hiddenBlock {
					wantB = player.StateBlocked // b's own block stands, and a's moves never reach b
				}
				if action == player.ActionBlock && hiddenBlock {
					wantB = player.StateBlocked
				}
				if got := stateOf(t, b.Client, a.User.ID.String()); got != wantB {
					t.Errorf("b sees %s, want %s", got, wantB)
				}
			})
		}
	}
}

func nextState(action, from string) (string, bool) {
	for _, tr := range player.StateMachine().Transitions {
		if tr.Action == action && tr.From == from {
			return tr.To, true
		}
	}
	return "", false
}

func TestSocialHiddenBlockAndErrors(t *testing.T) {
	srv := newPlayerServer(t)
	a, b := newPlayer(t, srv), newPlayer(t, srv)
	// b blocks a; a's request looks sent to a, but b never sees it.
	expect(t, act(t, b.Client, "block", a.User.Nickname), http.StatusOK, "")
	expect(t, act(t, a.Client, "request", strings.ToUpper(b.User.Nickname)), http.StatusOK, "")
	if got := stateOf(t, a.Client, b.User.ID.String()); got != player.StateOutgoing {
		t.Fatalf("a sees %s", got)
	}
	var bs player.Social
	call(t, b.Client, "GET", "/api/player/social", nil).Decode(t, &bs)
	if bs.Counts.Incoming != 0 || bs.Counts.Blocked != 1 {
		t.Fatalf("b's graph after a's hidden request: %+v", bs.Counts)
	}
	// Unblocking drops the request a sent meanwhile, as a decline would.
	expect(t, act(t, b.Client, "unblock", a.User.ID.String()), http.StatusOK, "")
	if ga, gb := stateOf(t, a.Client, b.User.ID.String()), stateOf(t, b.Client, a.User.ID.String()); ga != player.StateNone || gb != player.StateNone {
		t.Fatalf("after unblock: a sees %s, b sees %s", ga, gb)
	}
	expect(t, act(t, a.Client, "request", a.User.Nickname), http.StatusBadRequest, player.CodeSocialSelf)
	expect(t, act(t, a.Client, "request", "nobody-here"), http.StatusNotFound, player.CodePlayerNotFound)
	// A target that cannot be a nickname names nobody, whatever bytes it holds.
	for _, target := range []string{"ab\x00c", "\x00", "it's", strings.Repeat("x", 300), "päivi"} {
		expect(t, act(t, a.Client, "request", target), http.StatusNotFound, player.CodePlayerNotFound)
	}
	expect(t, act(t, a.Client, "request", "0b7a4c8e-2f5d-4a51-9f3e-3c1d2b4a5e6f"), http.StatusNotFound, player.CodePlayerNotFound)
	expect(t, act(t, a.Client, "hug", b.User.Nickname), http.StatusBadRequest, "VALIDATION_ERROR")
	expect(t, act(t, a.Client, "request", ""), http.StatusBadRequest, "VALIDATION_ERROR")
	// Administrators are not players.
	admin := srv.CreateAdmin(t)
	expect(t, act(t, a.Client, "request", admin.User.ID.String()), http.StatusNotFound, player.CodePlayerNotFound)
}

func TestFriendCapUnderConcurrentAccepts(t *testing.T) {
	const limit, askers = 3, 8
	srv := newPlayerServer(t, apitest.WithEnv("PLATFORM_FRIEND_LIMIT", fmt.Sprint(limit)))
	x := newPlayer(t, srv)
	var others []*apitest.Account
	for range askers {
		o := newPlayer(t, srv)
		expect(t, act(t, o.Client, "request", x.User.Nickname), http.StatusOK, "")
		others = append(others, o)
	}
	var wg sync.WaitGroup
	statuses := make(chan string, askers)
	for _, o := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := x.Client.Do("POST", "/api/player/social/actions", map[string]any{"action": "accept", "target": o.User.ID.String()})
			statuses <- fmt.Sprintf("%d %s", res.Status, res.Code())
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[string]int{}
	for s := range statuses {
		counts[s]++
	}
	want := map[string]int{"200 ": limit, "409 " + player.CodeSocialLimitReached: askers - limit}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Fatalf("concurrent accepts (-want +got):\n%s", diff)
	}
	var s player.Social
	call(t, x.Client, "GET", "/api/player/social", nil).Decode(t, &s)
	if s.Counts.Friends != limit || s.Counts.Incoming != askers-limit || s.Limits.MaxFriends != limit {
		t.Fatalf("after the race: %+v", s.Counts)
	}
}

func TestMetaServesTheStateMachine(t *testing.T) {
	srv := newPlayerServer(t)
	var meta struct {
		Social   player.SocialMachine  `json:"social"`
		DeckCode player.DeckCodeFormat `json:"deckCode"`
		Lobby    player.LobbyFacts     `json:"lobby"`
	}
	call(t, srv.Client(t), "GET", "/api/meta", nil).Decode(t, &meta)
	if diff := cmp.Diff(player.StateMachine(), meta.Social); diff != "" {
		t.Errorf("social state machine in /api/meta (-want +got):\n%s", diff)
	}
	if meta.DeckCode.Prefix != "TD" || meta.Lobby.JoinCode.Length != player.JoinCodeLen {
		t.Errorf("meta: %+v", meta)
	}
}

func TestJSONSchemas(t *testing.T) {
	srv := newPlayerServer(t)
	c := srv.Client(t)
	var idx struct {
		Schemas []struct{ Name, URL string }
	}
	call(t, c, "GET", "/api/schemas", nil).Decode(t, &idx)
	names := map[string]string{}
	for _, s := range idx.Schemas {
		names[s.Name] = s.URL
	}
	for _, name := range []string{"Bootstrap", "ImportDeckRequest", "ImportDeckResult", "DefaultDeckResult", "SocialActionRequest", "SocialActionResult", "LobbyResult", "CreateLobbyRequest", "Catalog"} {
		url, ok := names[name]
		if !ok {
			t.Errorf("schema %s is not published", name)
			continue
		}
		res := call(t, c, "GET", url, nil)
		expect(t, res, http.StatusOK, "")
		if ct := res.Header.Get("Content-Type"); ct != "application/schema+json" {
			t.Errorf("%s content type %q", name, ct)
		}
		var doc map[string]any
		res.Decode(t, &doc)
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" || doc["title"] != name {
			t.Errorf("%s: $schema %v, title %v", name, doc["$schema"], doc["title"])
		}
		// Every reference resolves inside the document.
		defs, _ := doc["$defs"].(map[string]any)
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				if ref, ok := x["$ref"].(string); ok {
					if !strings.HasPrefix(ref, "#/$defs/") || defs[strings.TrimPrefix(ref, "#/$defs/")] == nil {
						t.Errorf("%s: dangling $ref %s", name, ref)
					}
				}
				for _, child := range x {
					walk(child)
				}
			case []any:
				for _, child := range x {
					walk(child)
				}
			}
		}
		walk(doc)
	}
	expect(t, c.Do("GET", "/api/schemas/NoSuchThing.json", nil), http.StatusNotFound, "NOT_FOUND")
}

// bootstrapBody is the bootstrap as a client reads it.
type bootstrapBody struct {
	User struct {
		ID       string `json:"id"`
		Nickname string `json:"nickname"`
	} `json:"user"`
	player.Bootstrap
}

func TestBootstrap(t *testing.T) {
	srv := newPlayerServer(t)
	p := newPlayer(t, srv)
	var b bootstrapBody
	res := call(t, p.Client, "GET", "/api/player/bootstrap", nil)
	expect(t, res, http.StatusOK, "")
	res.Decode(t, &b)
	catalog := call(t, p.Client, "GET", "/api/content/catalog", nil)
	if b.User.ID != p.User.ID.String() || b.User.Nickname != p.User.Nickname {
		t.Errorf("user %+v", b.User)
	}
	if b.Catalog.ETag != catalog.Header.Get("ETag") || b.Catalog.Version < 1 {
		t.Errorf("catalog ref %+v, catalog ETag %s", b.Catalog, catalog.Header.Get("ETag"))
	}
	if len(b.Decks.Decks) != 3 || b.Decks.DefaultDeckID == nil || !b.Decks.DefaultValid {
		t.Errorf("decks %+v", b.Decks)
	}
	if b.Lobby != nil || len(b.Queues) != 5 || b.Social.Limits.MaxFriends != player.DefaultLimits.MaxFriends {
		t.Errorf("lobby %v, queues %v, social %+v", b.Lobby, b.Queues, b.Social)
	}
	// Live-ops values are evaluated for this player: a new account gets the
	// new-player value of daily-quest-count.
	if q := b.LiveOps.Flags["daily-quest-count"]; q.Value != float64(5) || q.Reason != "TARGETING_MATCH" || q.Rule != "new-players" {
		t.Errorf("daily-quest-count %+v", q)
	}
	if f := b.LiveOps.Flags["ranked-queues"]; f.Value != true || f.Reason != "DEFAULT" {
		t.Errorf("ranked-queues %+v", f)
	}

	// Friends, requests and the current lobby show up.
	o := newPlayer(t, srv)
	act(t, o.Client, "request", p.User.Nickname)
	created := call(t, p.Client, "POST", "/api/player/lobbies", map[string]any{"queue": "casual-short", "visibility": "private"})
	expect(t, created, http.StatusCreated, "")
	var lr player.LobbyResult
	created.Decode(t, &lr)
	b = bootstrapBody{}
	call(t, p.Client, "GET", "/api/player/bootstrap", nil).Decode(t, &b)
	if b.Social.Counts.Incoming != 1 || b.Lobby == nil || b.Lobby.ID != lr.Lobby.ID || b.Lobby.Code == nil {
		t.Errorf("social %+v, lobby %+v", b.Social.Counts, b.Lobby)
	}
}

func TestCatalogNotSeeded(t *testing.T) {
	// Until fixtures are seeded there is no catalog, and the routes that
	// need it say so (serve seeds an empty embedded database before it
	// listens; apitest servers do not).
	srv := apitest.New(t)
	expect(t, srv.Client(t).Do("GET", "/api/content/catalog", nil), http.StatusServiceUnavailable, player.CodeCatalogNotSeeded)
	p := newPlayer(t, srv)
	expect(t, p.Client.Do("GET", "/api/player/bootstrap", nil), http.StatusServiceUnavailable, player.CodeCatalogNotSeeded)
}

func editedFixtures(t *testing.T, file, old, new string) fstest.MapFS {
	t.Helper()
	m := embeddedFixtures(t)
	s := string(m[file].Data)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	m[file].Data = []byte(strings.Replace(s, old, new, 1))
	return m
}

// TestPagingOverHTTP follows the social and lobby cursors through the
// routes, and checks that paging parameters the server could not have
// given out are 400s in the error model, never a 500 or a silent first page.
func TestPagingOverHTTP(t *testing.T) {
	srv := newPlayerServer(t)
	me := newPlayer(t, srv)
	for range 3 {
		act(t, newPlayer(t, srv).Client, "request", me.User.Nickname)
		host := newPlayer(t, srv)
		expect(t, call(t, host.Client, "POST", "/api/player/lobbies", map[string]any{"queue": "custom-hosted", "visibility": "public"}),
			http.StatusCreated, "")
	}

	seen := map[string]bool{}
	path := "/api/player/social?limit=2"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatalf("social: more pages than requests (seen %v)", seen)
		}
		res := call(t, me.Client, "GET", path, nil)
		expect(t, res, http.StatusOK, "")
		var s player.Social
		res.Decode(t, &s)
		for _, e := range s.Incoming {
			if seen[e.Player.Nickname] {
				t.Fatalf("social: %s listed twice", e.Player.Nickname)
			}
			seen[e.Player.Nickname] = true
		}
		path = ""
		if s.NextCursor.Incoming != "" {
			path = "/api/player/social?limit=2&cursor=" + s.NextCursor.Incoming
		}
	}
	if len(seen) != 3 {
		t.Errorf("social pages listed %d incoming requests, want 3", len(seen))
	}

	res := call(t, me.Client, "GET", "/api/player/lobbies?limit=2", nil)
	expect(t, res, http.StatusOK, "")
	var page player.LobbyList
	res.Decode(t, &page)
	if len(page.Lobbies) != 2 || page.NextCursor == "" {
		t.Fatalf("first lobby page: %d lobbies, next cursor %q", len(page.Lobbies), page.NextCursor)
	}
	expect(t, call(t, me.Client, "GET", "/api/player/lobbies?limit=2&cursor="+page.NextCursor, nil), http.StatusOK, "")

	for _, list := range []string{"/api/player/social", "/api/player/lobbies"} {
		for query, code := range map[string]string{
			"cursor=not-a-cursor":                player.CodeInvalidCursor,
			"cursor=" + strings.Repeat("A", 400): player.CodeInvalidCursor,
			"limit=0":                            "VALIDATION_ERROR",
			"limit=1000":                         "VALIDATION_ERROR",
			"limit=ten":                          "VALIDATION_ERROR",
		} {
			expect(t, call(t, me.Client, "GET", list+"?"+query, nil), http.StatusBadRequest, code)
		}
	}
	// A cursor of one list is not a cursor of the other.
	expect(t, call(t, me.Client, "GET", "/api/player/social?cursor="+page.NextCursor, nil), http.StatusBadRequest, player.CodeInvalidCursor)
}
