package lifecycle_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// Every column the schema declares as referring to users(id) has a
// deletion rule: a table added without one fails here.
func TestEveryUserReferenceHasARule(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	var rules []string
	for _, r := range store.UserReferences {
		rules = append(rules, r.Table+"."+r.Column)
	}
	slices.Sort(rules)
	schema := storetest.UserForeignKeys(t, db)
	if len(schema) < 10 {
		t.Fatalf("schema walk found only %v; the query is broken", schema)
	}
	for _, ref := range schema {
		if !slices.Contains(rules, ref) {
			t.Errorf("%s refers to users(id) but store.UserReferences has no deletion rule for it", ref)
		}
	}
	for _, ref := range rules {
		if !slices.Contains(schema, ref) {
			t.Errorf("store.UserReferences names %s, which the schema does not declare as a user reference", ref)
		}
	}
}

// rich sets up a player with something in every table: friends in both
// directions, a request, a block by someone else, a hosted lobby with a
// second member, starter decks, a mailed token, a suspension and audit
// entries naming them.
type rich struct {
	me, friend, asked, blocker *apitest.Account
	lobbyID                    uuid.UUID
}

func makeRich(t *testing.T, srv *apitest.Server) *rich {
	t.Helper()
	ctx := t.Context()
	p := srv.App.Players
	r := &rich{me: srv.SignUpPlayer(t), friend: srv.SignUpPlayer(t), asked: srv.SignUpPlayer(t), blocker: srv.SignUpPlayer(t)}
	act := func(from, to *apitest.Account, action string) {
		t.Helper()
		if _, err := p.Act(ctx, from.User.ID, player.SocialActionInput{Action: action, Target: to.User.ID.String()}); err != nil {
			t.Fatalf("%s: %v", action, err)
		}
	}
	act(r.me, r.friend, player.ActionRequest)
	act(r.friend, r.me, player.ActionAccept)
	act(r.me, r.asked, player.ActionRequest)
	act(r.blocker, r.me, player.ActionBlock)
	if _, err := p.Bootstrap(ctx, player.Viewer{ID: r.me.User.ID, Nickname: r.me.User.Nickname}); err != nil {
		t.Fatal(err)
	}
	res, err := p.CreateLobby(ctx, r.me.User.ID, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic})
	if err != nil {
		t.Fatal(err)
	}
	r.lobbyID = res.Lobby.ID
	if _, err := p.JoinLobby(ctx, r.friend.User.ID, player.JoinLobbyInput{LobbyID: &r.lobbyID}); err != nil {
		t.Fatal(err)
	}
	me := &auth.Principal{Realm: account.RealmPlayer, User: r.me.User}
	if err := srv.App.Auth.SendVerificationEmail(ctx, account.RealmPlayer, me, r.me.User.Email, "", auth.Client{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Audit.Record(ctx, audit.Entry{Actor: "support@example.com", Action: "session.revoke", Target: r.me.User.ID.String(),
		Reason: "asked by " + r.me.User.Email, Details: map[string]string{"email": r.me.User.Email, "sessions": "2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.App.Lifecycle.Suspend(ctx, "support@example.com", account.RealmPlayer, r.me.User.ID.String(), "cooling off", futureHour()); err != nil {
		t.Fatal(err)
	}
	if refs := storetest.RowsReferencing(t, srv.App.DB, r.me.User.ID); len(refs) < 8 {
		t.Fatalf("set-up references the user from only %v", refs)
	}
	return r
}

// After a deletion no row anywhere refers to the user; the hosted lobby
// passed to the remaining member; the tombstone, the audit entry and the
// quarantine remain, and the audit entries lost the person's data.
func TestDeleteLeavesNoReference(t *testing.T) {
	t.Parallel()
	srv := apitest.NewWithContent(t)
	ctx := t.Context()
	r := makeRich(t, srv)
	id := r.me.User.ID
	ts, err := srv.App.Lifecycle.DeleteBySupport(ctx, "support@example.com", account.RealmPlayer, r.me.User.Email, "asked by mail")
	if err != nil {
		t.Fatal(err)
	}
	if ts.ID != id || ts.Reason != "asked by mail" || ts.Actor != "support@example.com" {
		t.Errorf("tombstone = %+v", ts)
	}
	if refs := storetest.RowsReferencing(t, srv.App.DB, id); len(refs) != 0 {
		t.Errorf("rows still refer to the deleted user: %v", refs)
	}
	l, err := srv.App.Players.Lobby(ctx, r.friend.User.ID, r.lobbyID)
	if err != nil {
		t.Fatal(err)
	}
	if l.Host.ID != r.friend.User.ID || l.Status != player.LobbyOpen || l.MemberCount != 1 {
		t.Errorf("lobby after the host's deletion: host %v status %s members %d, want %v open 1", l.Host.ID, l.Status, l.MemberCount, r.friend.User.ID)
	}
	entries, err := srv.App.Audit.List(ctx, audit.Filter{Target: id.String(), Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
		for _, v := range append([]string{e.Actor, e.Target, e.Reason}, mapValues(e.Details)...) {
			if v == r.me.User.Email || containsFold(v, r.me.User.Email) || containsFold(v, r.me.User.Nickname) {
				t.Errorf("audit entry %s still holds personal data: %+v", e.Action, e)
			}
		}
	}
	for _, want := range []string{"account.delete", "account.suspend", "session.revoke"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit actions %v lack %s", actions, want)
		}
	}
	if _, err := srv.App.Lifecycle.DeleteBySupport(ctx, "support@example.com", account.RealmPlayer, id.String(), "again"); platform.ErrorCode(err) != account.CodeUserNotFound {
		t.Errorf("second deletion = %v, want %s", err, account.CodeUserNotFound)
	}
	got, err := srv.App.Lifecycle.Tombstone(ctx, id)
	if err != nil || got.ID != id {
		t.Errorf("tombstone lookup = %+v, %v", got, err)
	}
	q, err := srv.App.Lifecycle.Quarantined(ctx, account.RealmPlayer, r.me.User.Email, r.me.User.Nickname)
	if err != nil || !q {
		t.Errorf("email and nickname quarantined = %v, %v; want true", q, err)
	}
	again := account.NewUser{Email: strings.ToUpper(r.me.User.Email), Name: "New", Nickname: "fresh_" + id.String()[:6], Password: apitest.DefaultPassword}
	if _, err := srv.App.Auth.SignUp(ctx, account.RealmPlayer, again, true, clientOf()); platform.ErrorCode(err) != account.CodeUserExists {
		t.Errorf("sign-up with the quarantined email = %v, want %s", err, account.CodeUserExists)
	}
	again.Email, again.Nickname = "other-"+id.String()[:8]+"@example.com", r.me.User.Nickname
	if _, err := srv.App.Auth.SignUp(ctx, account.RealmPlayer, again, true, clientOf()); platform.ErrorCode(err) != account.CodeNicknameTaken {
		t.Errorf("sign-up with the quarantined nickname = %v, want %s", err, account.CodeNicknameTaken)
	}
	// A living account cannot take them by a profile change either.
	other := srv.SignUpPlayer(t)
	res := other.Client.Do("POST", "/api/profile/request-profile-change",
		map[string]string{"name": "Other", "nickname": r.me.User.Nickname, "callbackURL": srv.URL + "/confirm"})
	if res.Code() != account.CodeNicknameTaken {
		t.Errorf("profile change to the quarantined nickname: %d %s", res.Status, res.Body)
	}
	res = other.Client.Do("POST", "/api/profile/request-email-change",
		map[string]string{"newEmail": r.me.User.Email, "callbackURL": srv.URL + "/confirm"})
	if res.Status != 422 || res.Code() != account.CodeUserExists {
		t.Errorf("email change to the quarantined email: %d %s", res.Status, res.Body)
	}
}

// With no quarantine the email is free at once.
func TestDeleteWithoutQuarantine(t *testing.T) {
	t.Parallel()
	srv := apitest.NewWithContent(t, apitest.WithEnv("PLATFORM_DELETION_QUARANTINE", "0s"))
	a := srv.SignUpPlayer(t)
	if _, err := srv.App.Lifecycle.DeleteBySupport(t.Context(), "support", account.RealmPlayer, a.User.Email, "asked"); err != nil {
		t.Fatal(err)
	}
	in := account.NewUser{Email: a.User.Email, Name: "Again", Nickname: a.User.Nickname, Password: apitest.DefaultPassword}
	if _, err := srv.App.Auth.SignUp(t.Context(), account.RealmPlayer, in, true, clientOf()); err != nil {
		t.Errorf("sign-up after deletion without quarantine: %v", err)
	}
	// The background sweep may free the two reservations (email and
	// nickname) before this one does; either way none is left.
	if n, err := srv.App.DB.Sweeps().FreedIdentifiers(t.Context(), time.Now(), false); err != nil || n > 2 {
		t.Errorf("freed identifiers swept: %d, %v; want at most 2", n, err)
	}
	if left := storetest.Count(t, srv.App.DB, "SELECT count(*) FROM identifier_quarantine"); left != 0 {
		t.Errorf("%d reservations left after the sweep; want none", left)
	}
}

// Administrators are deleted only by the admin tools, and never the last
// one with the admin role.
func TestDeleteAdmins(t *testing.T) {
	t.Parallel()
	srv := apitest.NewWithContent(t)
	ctx := t.Context()
	first := srv.CreateAdmin(t)
	_, err := srv.App.Lifecycle.DeleteBySupport(ctx, "owner", account.RealmAdmin, first.User.ID.String(), "leaving")
	if platform.ErrorCode(err) != "LAST_OWNER" {
		t.Fatalf("deleting the last admin = %v, want LAST_OWNER", err)
	}
	second := srv.CreateAdmin(t)
	p := &auth.Principal{Realm: account.RealmAdmin, User: second.User, Session: &auth.Session{}}
	if _, err := srv.App.Lifecycle.DeleteSelf(ctx, p, lifecycleRequest("")); platform.ErrorCode(err) != "ADMIN_DELETION_NOT_SELF_SERVICE" {
		t.Errorf("self-service deletion of an admin = %v", err)
	}
	if _, err := srv.App.Lifecycle.DeleteBySupport(ctx, "owner", account.RealmAdmin, first.User.ID.String(), "leaving"); err != nil {
		t.Fatalf("deleting one of two admins: %v", err)
	}
	if refs := storetest.RowsReferencing(t, srv.App.DB, first.User.ID); len(refs) != 0 {
		t.Errorf("rows still refer to the deleted admin: %v", refs)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func containsFold(s, sub string) bool {
	return sub != "" && strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func futureHour() time.Time { return time.Now().Add(time.Hour) }

func lifecycleRequest(password string) lifecycle.DeleteRequest {
	return lifecycle.DeleteRequest{Password: password}
}

func clientOf() auth.Client { return auth.Client{UserAgent: "lifecycle-test", IPAddress: "192.0.2.7"} }
