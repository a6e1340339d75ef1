package httpapi_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/store"
)

// capPages caps every pooled SQLite connection's database at the pages it
// has now (PRAGMA max_page_count), so a write that needs another page
// fails as on a full disk, with SQLITE_FULL.
func capPages(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := t.Context()
	conns := make([]*sql.Conn, 0, 4)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 4 { // the SQLite pool's size: every connection gets the cap
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var pages int
		if err := c.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
			t.Fatal(err)
		}
	}
}

// A full disk is a dependency failure: writes answer 503 with Retry-After
// and the health check fails naming the writes, until a write succeeds.
func TestSQLiteDiskFullAnswers503AndFailsHealth(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "off"))
	if srv.App.DB.Dialect() != store.SQLite {
		t.Skip("a full disk is injected through SQLite's page limit")
	}
	c := srv.Client(t)
	if h := c.Do("GET", "/api/health", nil); h.Status != 200 {
		t.Fatalf("health before = %d %s", h.Status, h.Body)
	}
	capPages(t, srv.App.DB.SQL())
	var full *apitest.Response
	for i := range 500 {
		r := c.Do("POST", "/api/auth/player/sign-up/email", signUpBody(fmt.Sprintf("full%d@example.com", i), fmt.Sprintf("full%d", i)))
		if r.Status != 200 {
			full = r
			break
		}
	}
	if full == nil {
		t.Fatal("500 sign-ups went through a capped database")
	}
	if full.Status != 503 || full.Code() != "SERVICE_UNAVAILABLE" || full.Header.Get("Retry-After") == "" {
		t.Fatalf("sign-up on a full disk = %d %s, Retry-After %q; want 503 SERVICE_UNAVAILABLE with Retry-After",
			full.Status, full.Body, full.Header.Get("Retry-After"))
	}
	h := c.Do("GET", "/api/health", nil)
	if h.Status != 503 || !strings.Contains(string(h.Body), `"database:writes"`) || !strings.Contains(string(h.Body), "full") {
		t.Fatalf("health on a full disk = %d %s", h.Status, h.Body)
	}
	if strings.Contains(srv.Logs(), "INTERNAL_ERROR") || strings.Contains(srv.Logs(), "request failed") {
		t.Fatalf("a full disk was logged as an internal error:\n%s", srv.Logs())
	}
	// Room again: the next write succeeds and health passes.
	uncap(t, srv.App.DB.SQL())
	if r := c.Do("POST", "/api/auth/player/sign-up/email", signUpBody("roomy@example.com", "roomy")); r.Status != 200 {
		t.Fatalf("sign-up with room again = %d %s", r.Status, r.Body)
	}
	if h := c.Do("GET", "/api/health", nil); h.Status != 200 {
		t.Fatalf("health with room again = %d %s", h.Status, h.Body)
	}
}

// uncap lifts capPages's limit on every pooled connection.
func uncap(t *testing.T, db *sql.DB) {
	t.Helper()
	conns := make([]*sql.Conn, 0, 4)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 4 {
		c, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.ExecContext(t.Context(), "PRAGMA max_page_count = 1073741823"); err != nil {
			t.Fatal(err)
		}
	}
}
