package lifecycle_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// The export of a player with something in every section validates
// against the PlayerExport schema (the apitest client checks every
// response against the OpenAPI document) and holds what was set up; a
// stale session is refused.
func TestExport(t *testing.T) {
	t.Parallel()
	srv := apitest.NewWithContent(t, apitest.WithEnv("PLATFORM_FRESH_AGE", "5m"))
	r := makeRich(t, srv)
	if _, err := srv.App.Lifecycle.Unsuspend(t.Context(), "support", r.friend.User.Realm, r.me.User.ID.String(), "test over"); err != nil {
		t.Fatal(err)
	}
	me := srv.SignUpPlayer(t) // a fresh session of its own, for the stale case below
	res := r.friend.Client.Do("GET", "/api/player/export", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("export: %d %s", res.Status, res.Body)
	}
	var e lifecycle.Export
	res.Decode(t, &e)
	if e.Profile.ID != r.friend.User.ID || e.Profile.Email != r.friend.User.Email {
		t.Errorf("profile: %+v", e.Profile)
	}
	if len(e.Sessions) == 0 || len(e.Social) == 0 || len(e.Lobbies) == 0 {
		t.Errorf("sections: %d sessions, %d edges, %d lobbies", len(e.Sessions), len(e.Social), len(e.Lobbies))
	}
	if e.LinkedAccounts == nil || e.SecondFactors == nil || e.Pending == nil || e.Audit == nil || e.Decks == nil {
		t.Errorf("an empty section is null: %+v", e)
	}

	// The richer account: decks, audit entries by support, a lifted
	// suspension; it signs in afresh for the export.
	p, err := srv.App.Auth.SignIn(t.Context(), r.me.User.Realm, r.me.User.Email, r.me.Password, true, clientOf())
	if err != nil {
		t.Fatal(err)
	}
	// A provider identity and an authenticator app, named but never
	// shown: no subject, no seed.
	now := time.Now().UTC()
	storetest.Exec(t, srv.App.DB, "INSERT INTO user_identities (id, user_id, provider, issuer, subject, email, created_at, updated_at) VALUES (?, ?, 'op', 'https://op.example', 'subject-1', '', ?, ?)",
		uuid.New(), r.me.User.ID, now, now)
	storetest.Exec(t, srv.App.DB, "INSERT INTO two_factors (user_id, secret, verified, created_at, updated_at) VALUES (?, 'sealed-seed', TRUE, ?, ?)",
		r.me.User.ID, now, now)
	c := srv.Client(t)
	c.AddSession(p)
	res = c.Do("GET", "/api/player/export", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("export: %d %s", res.Status, res.Body)
	}
	res.Decode(t, &e)
	if len(e.Decks) == 0 || len(e.Audit) < 2 || len(e.Social) != 2 {
		t.Errorf("rich export: %d decks, %d audit entries, %d edges", len(e.Decks), len(e.Audit), len(e.Social))
	}
	if len(e.LinkedAccounts) != 1 || e.LinkedAccounts[0].ProviderID != "op" ||
		len(e.SecondFactors) != 1 || e.SecondFactors[0].Kind != "totp" {
		t.Errorf("rich export: linked %+v, factors %+v", e.LinkedAccounts, e.SecondFactors)
	}
	if strings.Contains(string(res.Body), "subject-1") || strings.Contains(string(res.Body), "sealed-seed") {
		t.Errorf("the export shows a subject or a seed: %s", res.Body)
	}

	storetest.AgeSessions(t, srv.App.DB, me.User.ID, 10*time.Minute)
	if res := me.Client.Do("GET", "/api/player/export", nil); res.Status != http.StatusForbidden || res.Code() != "SESSION_NOT_FRESH" {
		t.Errorf("stale session: %d %s", res.Status, res.Body)
	}
	if res := srv.Client(t).Do("GET", "/api/player/export", nil); res.Status != http.StatusUnauthorized {
		t.Errorf("no session: %d %s", res.Status, res.Body)
	}
}
