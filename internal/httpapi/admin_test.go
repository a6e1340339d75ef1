package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/httpapi"
	"github.com/towerdefence/platformctl/internal/role"
)

// adminPath fills a route pattern's wildcards with id.
func adminPath(pattern string, id uuid.UUID) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	for _, w := range []string{"{id}"} {
		path = strings.ReplaceAll(path, w, id.String())
	}
	if strings.HasSuffix(path, "/api/admin/users") {
		path += "?query=player"
	}
	return method, path
}

// TestAdminRoleMatrix asks every administrator plane route as every kind
// of caller: without a session and with a player's session 401, with an
// administrator session 403 naming the permission exactly when the role
// lacks it, and anything but 401/403 when it holds it.
func TestAdminRoleMatrix(t *testing.T) {
	srv := apitest.New(t)
	player := srv.SignUpPlayer(t)
	callers := map[string]*apitest.Client{"anonymous": srv.Client(t), "player": player.Client}
	roles := map[string]role.Role{}
	for _, r := range role.All() {
		callers[string(r)] = srv.CreateAdminWithRole(t, string(r)).Client
		roles[string(r)] = r
	}
	routes := httpapi.AdminRoutePermissions()
	if len(routes) < 20 {
		t.Fatalf("only %d admin routes", len(routes))
	}
	for pattern, perm := range map[string]role.Permission{
		"POST /api/admin/liveops":           role.LiveOpsWrite,
		"POST /api/admin/users/{id}/delete": role.AdminsWrite,
		"GET /api/admin/users/{id}/export":  role.PlayersRead,
		"POST /api/admin/admins":            role.AdminsWrite,
		"GET /api/admin/users/{id}/status":  role.PlayersRead,
		"POST /api/admin/tokens/inspect":    role.TokensIssue,
	} {
		if got, ok := routes[pattern]; !ok || got != perm {
			t.Errorf("the matrix has %s with %q, want %q", pattern, got, perm)
		}
	}
	for pattern, perm := range routes {
		for name, c := range callers {
			t.Run(pattern+" as "+name, func(t *testing.T) {
				method, path := adminPath(pattern, uuid.New())
				var body any
				if method == http.MethodPost {
					body = map[string]any{}
				}
				res := c.Do(method, path, body)
				r, isAdmin := roles[name]
				switch {
				case !isAdmin:
					if res.Status != 401 || res.Code() != "UNAUTHORIZED" {
						t.Fatalf("status %d %s, want 401 UNAUTHORIZED", res.Status, res.Body)
					}
				case !r.Can(perm):
					var e struct {
						Code    string
						Details map[string]any
					}
					res.Decode(t, &e)
					if res.Status != 403 || e.Code != "FORBIDDEN" || e.Details["permission"] != string(perm) {
						t.Fatalf("status %d %s, want 403 naming %s", res.Status, res.Body, perm)
					}
				default:
					if res.Status == 401 || res.Status == 403 || res.Status >= 500 {
						t.Fatalf("status %d %s for a role holding %s", res.Status, res.Body, perm)
					}
				}
			})
		}
	}
}

// TestAdminPostsRefuseBadRequests sends every POST route of the plane, as
// an administrator holding every permission, from a foreign origin,
// without an origin, with a body that is not JSON and with one of the
// wrong media type: each is refused with a 4xx in the error model before
// anything changes.
func TestAdminPostsRefuseBadRequests(t *testing.T) {
	srv := apitest.New(t)
	boss := srv.CreateAdminWithRole(t, "admin")
	target := srv.SignUpPlayer(t)
	for pattern := range httpapi.AdminRoutePermissions() {
		if !strings.HasPrefix(pattern, "POST ") {
			continue
		}
		_, path := adminPath(pattern, target.User.ID)
		cases := []struct {
			name, origin, contentType, body string
			status                          int
			code                            string
		}{
			{"foreign origin", "https://evil.example", "application/json", "{}", 403, "INVALID_ORIGIN"},
			{"no origin", "", "application/json", "{}", 403, "MISSING_OR_NULL_ORIGIN"},
			{"not JSON", srv.URL, "application/json", "{", 400, "INVALID_JSON"},
			{"wrong type", srv.URL, "application/json", `{"reason": 5}`, 400, "VALIDATION_ERROR"},
			{"text body", srv.URL, "text/plain", `{}`, 415, "UNSUPPORTED_MEDIA_TYPE"},
		}
		for _, tc := range cases {
			t.Run(pattern+" "+tc.name, func(t *testing.T) {
				if tc.name == "wrong type" && !takesReason(pattern) {
					t.Skip("the body has no reason field")
				}
				req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", tc.contentType)
				if tc.origin != "" {
					req.Header.Set("Origin", tc.origin)
				}
				res := boss.Client.Send(req)
				if res.Status != tc.status || res.Code() != tc.code {
					t.Fatalf("status %d %s, want %d %s", res.Status, res.Body, tc.status, tc.code)
				}
			})
		}
	}
	if n := countSessions(t, srv, target.User.ID); n != 1 {
		t.Fatalf("the player has %d sessions after refused requests, want 1", n)
	}
}

// takesReason reports whether the body of a POST route has a reason
// field, which "wrong type" sends as a number.
func takesReason(pattern string) bool {
	for _, suffix := range []string{"/revoke", "/retry", "/delete", "/unsuspend", "/factors/reset", "/suspend", " /api/admin/liveops", "/seeds", "/role"} {
		if strings.HasSuffix(pattern, suffix) {
			return true
		}
	}
	return false
}

func countSessions(t *testing.T, srv *apitest.Server, id uuid.UUID) int {
	t.Helper()
	_, list, err := srv.App.Auth.SupportListSessions(t.Context(), "system:test", account.RealmPlayer, id.String())
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// TestAdminUserSearch finds players by email prefix, nickname prefix and
// id, a page at a time, and refuses a cursor of another search.
func TestAdminUserSearch(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	tag := strings.ToLower(uuid.NewString()[:6])
	var ids []uuid.UUID
	for i := range 5 {
		a := srv.SignUpPlayerWith(t, account.NewUser{Email: fmt.Sprintf("zz%s%d@example.com", tag, i), Name: "Z",
			Nickname: fmt.Sprintf("Q%s_%d", tag, i), Password: apitest.DefaultPassword})
		ids = append(ids, a.User.ID)
	}
	search := func(q, cursor string, limit int) admin.UserPage {
		t.Helper()
		v := url.Values{"query": {q}, "limit": {fmt.Sprint(limit)}}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		res := support.Client.Do("GET", "/api/admin/users?"+v.Encode(), nil)
		if res.Status != 200 {
			t.Fatalf("search %q: %d %s", q, res.Status, res.Body)
		}
		var p admin.UserPage
		res.Decode(t, &p)
		return p
	}
	for _, q := range []string{"email:zz" + tag, "email:ZZ" + tag, "q" + tag, "nickname:Q" + tag} {
		var got []uuid.UUID
		cursor := ""
		for pages := 0; ; pages++ {
			p := search(q, cursor, 2)
			for _, u := range p.Users {
				got = append(got, u.ID)
			}
			if p.NextCursor == nil {
				break
			}
			if pages > 5 {
				t.Fatalf("%q: more pages than players", q)
			}
			cursor = *p.NextCursor
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Errorf("search %q found %v, want %v in order", q, got, ids)
		}
	}
	if p := search(ids[3].String(), "", 10); len(p.Users) != 1 || p.Users[0].ID != ids[3] {
		t.Errorf("search by id: %+v", p)
	}
	for _, wild := range []string{"email:%", "_", "email:zz" + tag + "_", "é" + tag} {
		if p := search(wild, "", 10); len(p.Users) != 0 {
			t.Errorf("search %q is a pattern, not a prefix: %+v", wild, p.Users)
		}
	}
	if p := search("nobody"+tag, "", 10); len(p.Users) != 0 || p.NextCursor != nil {
		t.Errorf("search for nobody: %+v", p)
	}
	if p := search("zz"+tag+"4@exa", "", 10); len(p.Users) != 1 || p.Users[0].ID != ids[4] {
		t.Errorf("search by an email with @: %+v", p)
	}
	first := search("email:zz"+tag, "", 2)
	res := support.Client.Do("GET", "/api/admin/users?query=q"+tag+"&cursor="+url.QueryEscape(*first.NextCursor), nil)
	if res.Status != 400 || res.Code() != "VALIDATION_ERROR" {
		t.Errorf("an email cursor on a nickname search: %d %s", res.Status, res.Body)
	}
	for _, bad := range []string{"", "query=", "query=a&limit=0x", "query=a&limit=500", "query=a&cursor=%25%25", "query=email:%00", "query=%FF"} {
		if res := support.Client.Do("GET", "/api/admin/users?"+bad, nil); res.Status != 400 {
			t.Errorf("?%s: %d %s", bad, res.Status, res.Body)
		}
	}
}

// TestAdminRevokeEndsStreamAndAudits has a support administrator look a
// player up, revoke their sessions over the API and read the audit entry:
// the player's open event stream ends and their cookie stops working, and
// the entry names the administrator by id.
func TestAdminRevokeEndsStreamAndAudits(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	player := srv.SignUpPlayer(t)
	stream, res := player.Client.OpenEvents("")
	if res != nil {
		t.Fatalf("open events: %d %s", res.Status, res.Body)
	}
	defer stream.Close()
	stream.NextOf(t, "snapshot", 10*time.Second)

	res = support.Client.Do("GET", "/api/admin/users/"+player.User.ID.String(), nil)
	var detail admin.UserDetail
	res.Decode(t, &detail)
	if res.Status != 200 || detail.User.Email != player.User.Email || len(detail.Sessions) != 1 || detail.Counts.Decks < 0 {
		t.Fatalf("detail %d %s", res.Status, res.Body)
	}
	res = support.Client.Do("POST", "/api/admin/users/"+player.User.ID.String()+"/sessions/revoke", map[string]string{"reason": "account takeover"})
	var revoked admin.Revoked
	res.Decode(t, &revoked)
	if res.Status != 200 || revoked.Revoked != 1 || revoked.UserID != player.User.ID {
		t.Fatalf("revoke %d %s", res.Status, res.Body)
	}
	stream.NextOf(t, "session.ended", 10*time.Second)
	stream.Ended(t, 10*time.Second)
	if res := player.Client.Do("GET", "/api/player/bootstrap", nil); res.Status != 401 {
		t.Fatalf("the revoked cookie still works: %d", res.Status)
	}

	res = support.Client.Do("GET", "/api/admin/audit?action=sessions.revoke&user="+url.QueryEscape(player.User.Email), nil)
	var page admin.AuditPage
	res.Decode(t, &page)
	if res.Status != 200 || len(page.Entries) != 1 {
		t.Fatalf("audit %d %s", res.Status, res.Body)
	}
	e := page.Entries[0]
	if e.Actor != "admin:"+support.User.ID.String() || e.Reason != "account takeover" || e.Target != player.User.ID.String() {
		t.Fatalf("audit entry %+v", e)
	}
	res = support.Client.Do("POST", "/api/admin/users/"+player.User.ID.String()+"/sessions/revoke",
		map[string]string{"sessionId": uuid.NewString()})
	if res.Status != 404 || res.Code() != auth.CodeSessionNotFound {
		t.Fatalf("revoke an unknown session: %d %s", res.Status, res.Body)
	}
}

// TestAdminAuditPages walks the audit trail a page at a time: every entry
// once, newest first.
func TestAdminAuditPages(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	action := "test.page-" + uuid.NewString()[:8]
	for i := range 7 {
		if err := srv.App.Audit.Record(t.Context(), audit.Entry{Actor: "system:test", Action: action, Target: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var targets []string
	cursor := ""
	for range 10 {
		path := "/api/admin/audit?limit=3&action=" + action + "&since=" + url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		res := support.Client.Do("GET", path, nil)
		var page admin.AuditPage
		res.Decode(t, &page)
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
		for _, e := range page.Entries {
			targets = append(targets, e.Target)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if strings.Join(targets, ",") != "6,5,4,3,2,1,0" {
		t.Fatalf("pages gave %v", targets)
	}
	for _, bad := range []string{"since=yesterday", "action=%00", "user=%FF", "actor=" + strings.Repeat("a", 300), "cursor=e30", "limit=-1"} {
		if res := support.Client.Do("GET", "/api/admin/audit?"+bad, nil); res.Status != 400 {
			t.Errorf("%s: %d %s", bad, res.Status, res.Body)
		}
	}
}

// TestAdminLiveOpsAndRoles changes a seed and a role over the API and
// finds both in the audit trail under the administrator's id.
func TestAdminLiveOpsAndRoles(t *testing.T) {
	srv, _ := liveOpsServer(t)
	boss := srv.CreateAdminWithRole(t, "admin")
	viewer := srv.CreateAdminWithRole(t, "viewer")
	res := boss.Client.Do("POST", "/api/admin/liveops/seeds", admin.SeedInput{Size: "short", Seed: 777001, Reason: "new season"})
	if res.Status != 200 {
		t.Fatalf("set seed: %d %s", res.Status, res.Body)
	}
	res = viewer.Client.Do("GET", "/api/admin/liveops", nil)
	if res.Status != 200 || !strings.Contains(string(res.Body), "777001") {
		t.Fatalf("liveops: %d", res.Status)
	}
	res = boss.Client.Do("POST", "/api/admin/admins/"+viewer.User.ID.String()+"/role", admin.RoleInput{Role: "support", Reason: "joined support"})
	if res.Status != 200 {
		t.Fatalf("set role: %d %s", res.Status, res.Body)
	}
	if res := viewer.Client.Do("GET", "/api/admin/mail", nil); res.Status != 200 {
		t.Fatalf("the new role does not apply at once: %d %s", res.Status, res.Body)
	}
	res = boss.Client.Do("GET", "/api/admin/admins", nil)
	if res.Status != 200 || !strings.Contains(string(res.Body), viewer.User.Email) {
		t.Fatalf("admins: %d %s", res.Status, res.Body)
	}
	entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Actor: "admin:" + boss.User.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Action != "admin.set-role" || entries[1].Action != "liveops.set-seed" {
		t.Fatalf("audit %+v", entries)
	}
	res = boss.Client.Do("GET", "/api/admin/me", nil)
	if res.Status != 200 || !strings.Contains(string(res.Body), `"admins:write"`) {
		t.Fatalf("me: %d %s", res.Status, res.Body)
	}
}

// TestAdminSuspendAndResetFactors has a support administrator suspend a
// player over the API: the player's stream ends, their cookie stops
// working and a sign-in answers ACCOUNT_SUSPENDED with details.until;
// after the unsuspension the player signs in again. A factor reset needs
// a reason and ends the player's sessions. Every change is audited under
// the administrator's id.
func TestAdminSuspendAndResetFactors(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	player := srv.SignUpPlayer(t)
	path := "/api/admin/users/" + player.User.ID.String()
	stream, res := player.Client.OpenEvents("")
	if res != nil {
		t.Fatalf("open events: %d %s", res.Status, res.Body)
	}
	defer stream.Close()
	stream.NextOf(t, "snapshot", 10*time.Second)

	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	res = support.Client.Do("POST", path+"/suspend", map[string]any{"reason": "chargeback fraud", "until": until})
	if res.Status != 200 {
		t.Fatalf("suspend: %d %s", res.Status, res.Body)
	}
	stream.NextOf(t, "session.ended", 10*time.Second)
	stream.Ended(t, 10*time.Second)
	if res := player.Client.Do("GET", "/api/player/bootstrap", nil); res.Status != 401 {
		t.Fatalf("the suspended player's cookie still works: %d", res.Status)
	}
	signIn := func() *apitest.Response {
		return srv.Client(t).Do("POST", "/api/auth/player/sign-in/email",
			map[string]string{"email": player.User.Email, "password": player.Password})
	}
	res = signIn()
	if res.Status != 403 || res.Code() != "ACCOUNT_SUSPENDED" || !strings.Contains(string(res.Body), until.Format("2006-01-02T15:04:05")) {
		t.Fatalf("sign-in while suspended: %d %s", res.Status, res.Body)
	}
	if res := support.Client.Do("POST", path+"/unsuspend", map[string]string{}); res.Status != 400 {
		t.Fatalf("unsuspend without a reason: %d %s", res.Status, res.Body)
	}
	res = support.Client.Do("POST", path+"/unsuspend", map[string]string{"reason": "refund cleared"})
	if res.Status != 200 || !strings.Contains(string(res.Body), `"lifted":true`) {
		t.Fatalf("unsuspend: %d %s", res.Status, res.Body)
	}
	if res := signIn(); res.Status != 200 {
		t.Fatalf("sign-in after the unsuspension: %d %s", res.Status, res.Body)
	}

	if res := support.Client.Do("POST", path+"/factors/reset", map[string]string{}); res.Status != 400 {
		t.Fatalf("factor reset without a reason: %d %s", res.Status, res.Body)
	}
	res = support.Client.Do("POST", path+"/factors/reset", map[string]string{"reason": "lost phone, ID checked"})
	if res.Status != 200 || !strings.Contains(string(res.Body), `"sessionsEnded":`) {
		t.Fatalf("factor reset: %d %s", res.Status, res.Body)
	}

	for _, action := range []string{"", "&action=factor.reset"} {
		res = support.Client.Do("GET", "/api/admin/audit?user="+player.User.ID.String()+action, nil)
		var page admin.AuditPage
		res.Decode(t, &page)
		if res.Status != 200 || len(page.Entries) == 0 {
			t.Fatalf("audit%s: %d %s", action, res.Status, res.Body)
		}
		for _, e := range page.Entries {
			if e.Actor != "admin:"+support.User.ID.String() {
				t.Errorf("audit entry %s by %q, want the administrator's id", e.Action, e.Actor)
			}
		}
	}
}
