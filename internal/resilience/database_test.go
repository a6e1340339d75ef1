package resilience_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/netfault"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/system"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// requestTimeout is the server's PLATFORM_REQUEST_TIMEOUT in this test
// (10s by default), and outageBound how long any request may take while
// the database is unreachable: it must answer, not hang.
const (
	requestTimeout = time.Second
	outageBound    = requestTimeout + 2*time.Second
)

// probe is a request that needs the database.
type probe struct {
	name   string
	method string
	path   string
	body   any
	// ok is the status while the database is up.
	ok int
}

// TestDatabaseOutage cuts the link to PostgreSQL while the server runs,
// first as a refused connection (a crashed or restarting server), then
// as a black hole (a partition or a hung server). Either way health
// must report 503 and every request must answer 503
// SERVICE_UNAVAILABLE within outageBound; when the link returns the
// service must resume by itself, without a restart.
func TestDatabaseOutage(t *testing.T) {
	if os.Getenv(storetest.EnvURL) == "" {
		t.Skip("needs PostgreSQL (" + storetest.EnvURL + "): the embedded SQLite file cannot become unreachable")
	}
	dbURL, err := url.Parse(storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := netfault.Listen(dbURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	dbURL.Host = proxy.Addr()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_DATABASE_URL", dbURL.String()),
		apitest.WithEnv("PLATFORM_REQUEST_TIMEOUT", requestTimeout.String()))
	seedContent(t, srv.App)
	signedIn := srv.SignUpPlayer(t).Client

	probes := []probe{
		{name: "health", method: "GET", path: "/api/health", ok: http.StatusOK},
		{name: "session read", method: "GET", path: "/api/player/decks", ok: http.StatusOK},
		{name: "bootstrap", method: "GET", path: "/api/player/bootstrap", ok: http.StatusOK},
		{name: "write", method: "POST", path: "/api/player/social/actions", body: map[string]string{"action": "request", "target": "nobody-by-this-name"}, ok: http.StatusNotFound},
	}
	// client is a signed-in client of t that gives up well after
	// outageBound, so that a hang shows as a slow answer, not a crash.
	client := func(t *testing.T) *apitest.Client {
		c := srv.Client(t)
		c.HTTP.Jar = signedIn.HTTP.Jar
		c.HTTP.Timeout = 3 * outageBound
		return c
	}
	expectUp := func(t *testing.T) {
		t.Helper()
		c := client(t)
		for _, p := range probes {
			if res := c.Do(p.method, p.path, p.body); res.Status != p.ok {
				t.Fatalf("%s with the database up: %d %s", p.name, res.Status, res.Body)
			}
		}
	}
	expectUp(t)

	// Repeat each outage so that the second one meets a pool whose
	// connections were opened after the first.
	for _, mode := range []netfault.Mode{netfault.Refuse, netfault.Blackhole, netfault.Refuse, netfault.Blackhole} {
		t.Run(mode.String(), func(t *testing.T) {
			c := client(t)
			proxy.Set(mode)
			for _, p := range probes {
				if p.path == "/api/health" {
					// A health report stands for system.HealthEvery, so
					// health may pass on for that long.
					testwait.Nil(t, system.HealthEvery+outageBound, func() error { return outageAnswer(t, c, p, mode) })
					continue
				}
				if err := outageAnswer(t, c, p, mode); err != nil {
					t.Error(err)
				}
			}

			proxy.Set(netfault.Up)
			testwait.Nil(t, 15*time.Second, func() error {
				if res := c.Do("GET", "/api/health", nil); res.Status != http.StatusOK {
					return fmt.Errorf("health still %d after the database came back: %s", res.Status, res.Body)
				}
				return nil
			})
			expectUp(t)
		})
	}
}

// outageAnswer sends p with the database in mode: the answer must come
// within outageBound, and be 503 (SERVICE_UNAVAILABLE from every route
// but health, whose body is its report).
func outageAnswer(t *testing.T, c *apitest.Client, p probe, mode netfault.Mode) error {
	t.Helper()
	start := time.Now()
	res := c.Do(p.method, p.path, p.body)
	if took := time.Since(start); took > outageBound {
		t.Errorf("%s with the database %s took %s, want an answer within %s", p.name, mode, took.Round(time.Millisecond), outageBound)
	}
	if res.Status != http.StatusServiceUnavailable {
		return fmt.Errorf("%s with the database %s: %d %s, want 503", p.name, mode, res.Status, res.Body)
	}
	if p.path != "/api/health" && res.Code() != "SERVICE_UNAVAILABLE" {
		return fmt.Errorf("%s with the database %s: code %q, want SERVICE_UNAVAILABLE", p.name, mode, res.Code())
	}
	return nil
}

// seedContent publishes the embedded content, as an operator does before
// serving on PostgreSQL (the embedded SQLite seeds itself).
func seedContent(t *testing.T, a *app.App) {
	t.Helper()
	set, problems := seed.Load(fixtures.FS())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if _, err := a.Seeder.Seed(t.Context(), set, seed.Options{}); err != nil {
		t.Fatal(err)
	}
}
