package lifecycle_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/storetest"
)

const deletePath = "/api/auth/player/delete-user"

// assertGone checks that the account no longer exists and its tombstone
// does; assertAlive the opposite.
func assertGone(t *testing.T, srv *apitest.Server, a *apitest.Account) {
	t.Helper()
	if refs := storetest.RowsReferencing(t, srv.App.DB, a.User.ID); len(refs) != 0 {
		t.Errorf("rows still refer to the deleted user: %v", refs)
	}
	if _, err := srv.App.Lifecycle.Tombstone(t.Context(), a.User.ID); err != nil {
		t.Errorf("no tombstone: %v", err)
	}
}

func assertAlive(t *testing.T, srv *apitest.Server, a *apitest.Account) {
	t.Helper()
	if _, err := srv.App.Accounts.ByID(t.Context(), a.User.ID); err != nil {
		t.Errorf("account %s is gone: %v", a.User.Email, err)
	}
}

// Without mail configured, the password or a fresh session deletes at
// once; a wrong password and a stale session delete nothing.
func TestDeleteUserDirect(t *testing.T) {
	t.Parallel()
	srv := apitest.NewWithContent(t, apitest.WithEnv("PLATFORM_FRESH_AGE", "5m"))
	t.Run("wrong password", func(t *testing.T) {
		a := srv.SignUpPlayer(t)
		res := a.Client.Do("POST", deletePath, map[string]string{"password": "not the password"})
		if res.Status != http.StatusBadRequest || res.Code() != "INVALID_PASSWORD" {
			t.Fatalf("got %d %s", res.Status, res.Body)
		}
		assertAlive(t, srv, a)
	})
	t.Run("stale session without password", func(t *testing.T) {
		a := srv.SignUpPlayer(t)
		storetest.AgeSessions(t, srv.App.DB, a.User.ID, 10*time.Minute)
		res := a.Client.Do("POST", deletePath, map[string]string{})
		if res.Status != http.StatusForbidden || res.Code() != "SESSION_NOT_FRESH" {
			t.Fatalf("got %d %s", res.Status, res.Body)
		}
		assertAlive(t, srv, a)
		res = a.Client.Do("POST", deletePath, map[string]string{"password": a.Password})
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), "User deleted") {
			t.Fatalf("with password: %d %s", res.Status, res.Body)
		}
		assertGone(t, srv, a)
	})
	t.Run("fresh session", func(t *testing.T) {
		a := srv.SignUpPlayer(t)
		res := a.Client.Do("POST", deletePath, nil)
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), "User deleted") {
			t.Fatalf("got %d %s", res.Status, res.Body)
		}
		assertGone(t, srv, a)
		if res := a.Client.Do("GET", "/api/auth/player/get-session", nil); strings.TrimSpace(string(res.Body)) != "null" {
			t.Errorf("session after deletion: %s", res.Body)
		}
		if res := a.Client.Do("POST", deletePath, nil); res.Status != http.StatusUnauthorized {
			t.Errorf("deleting again: %d %s", res.Status, res.Body)
		}
	})
	t.Run("unauthenticated and hostile bodies", func(t *testing.T) {
		c := srv.Client(t)
		if res := c.Do("POST", deletePath, nil); res.Status != http.StatusUnauthorized {
			t.Errorf("no session: %d %s", res.Status, res.Body)
		}
		a := srv.SignUpPlayer(t)
		for _, body := range []any{`{"password":`, map[string]any{"password": 7}, map[string]string{"callbackURL": "https://evil.example/"},
			map[string]string{"token": strings.Repeat("x", 300)}} {
			res := a.Client.Do("POST", deletePath, body)
			if res.Status < 400 || res.Status >= 500 {
				t.Errorf("body %v: %d %s", body, res.Status, res.Body)
			}
		}
		assertAlive(t, srv, a)
	})
}

// With mail configured, the request mails a single-use link; another
// account's, a used or an expired token deletes nothing.
func TestDeleteUserByMail(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t, mailtest.Options{})
	srv := apitest.NewWithContent(t, apitest.WithEnv("PLATFORM_SMTP_URL", smtp.URL()), apitest.WithEnv("PLATFORM_MAIL_POLL_INTERVAL", "50ms"))
	sent := map[string]int{}
	request := func(a *apitest.Account, callback string) string {
		t.Helper()
		sent[a.User.Email]++
		res := a.Client.Do("POST", deletePath, map[string]string{"callbackURL": callback})
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), "Verification email sent") {
			t.Fatalf("request: %d %s", res.Status, res.Body)
		}
		m := smtp.WaitForNth(t, 10*time.Second, func(m mailtest.Message) bool {
			return mailtest.To(a.User.Email)(m) && strings.Contains(m.Subject, "deletion")
		}, sent[a.User.Email])
		link, err := url.Parse(m.Link())
		if err != nil || link.Query().Get("token") == "" {
			t.Fatalf("mailed link %q: %v", m.Link(), err)
		}
		return link.RequestURI()
	}
	a, b := srv.SignUpPlayer(t), srv.SignUpPlayer(t)
	assertAlive(t, srv, a)
	linkA := request(a, srv.URL+"/bye")
	linkB := request(b, "")

	if res := a.Client.Do("GET", linkB, nil); res.Status != http.StatusNotFound || res.Code() != "INVALID_TOKEN" {
		t.Errorf("a with b's link: %d %s", res.Status, res.Body)
	}
	assertAlive(t, srv, b)
	assertAlive(t, srv, a)
	if res := srv.Client(t).Do("GET", linkA, nil); res.Status != http.StatusFound ||
		!strings.Contains(res.Header.Get("Location"), "error=UNAUTHORIZED") {
		t.Errorf("link without a session: %d %s %s", res.Status, res.Header.Get("Location"), res.Body)
	}
	res := a.Client.Do("GET", linkA, nil)
	if res.Status != http.StatusFound || res.Header.Get("Location") != srv.URL+"/bye" {
		t.Fatalf("a's link: %d %s %s", res.Status, res.Header.Get("Location"), res.Body)
	}
	assertGone(t, srv, a)
	smtp.WaitFor(t, 10*time.Second, func(m mailtest.Message) bool {
		return mailtest.To(a.User.Email)(m) && strings.Contains(m.Subject, "was deleted")
	})

	storetest.ExpireDeletionTokens(t, srv.App.DB, b.User.ID)
	if res := b.Client.Do("GET", linkB, nil); res.Status != http.StatusNotFound || res.Code() != "INVALID_TOKEN" {
		t.Errorf("expired link: %d %s", res.Status, res.Body)
	}
	assertAlive(t, srv, b)
	if n, err := srv.App.DB.Sweeps().ExpiredDeletionTokens(t.Context(), time.Now(), false); err != nil || n != 1 {
		t.Errorf("expired deletion links swept: %d, %v; want 1", n, err)
	}
	linkB = request(b, "")
	tok, _ := url.ParseQuery(strings.SplitN(linkB, "?", 2)[1])
	if res := b.Client.Do("POST", deletePath, map[string]string{"token": tok.Get("token")}); res.Status != http.StatusOK {
		t.Fatalf("token in the body: %d %s", res.Status, res.Body)
	}
	assertGone(t, srv, b)
	if res := b.Client.Do("GET", linkB, nil); res.Status != http.StatusUnauthorized {
		t.Errorf("reused link: %d %s", res.Status, res.Body)
	}
}
