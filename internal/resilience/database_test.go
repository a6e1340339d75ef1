package resilience_test

import (
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/netfault"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// outageBound is how long any request may take while the database is
// unreachable: it must answer, not hang.
const outageBound = 5 * time.Second

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
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_DATABASE_URL", dbURL.String()))
	c := srv.Client(t)

	probes := []probe{
		{name: "health", method: "GET", path: "/api/health", ok: http.StatusOK},
	}
	expectUp := func(t *testing.T) {
		t.Helper()
		for _, p := range probes {
			if res := c.Do(p.method, p.path, p.body); res.Status != p.ok {
				t.Fatalf("%s with the database up: %d %s", p.name, res.Status, res.Body)
			}
		}
	}
	expectUp(t)

	for _, mode := range []netfault.Mode{netfault.Refuse, netfault.Blackhole} {
		t.Run(mode.String(), func(t *testing.T) {
			proxy.Set(mode)
			for _, p := range probes {
				start := time.Now()
				res := c.Do(p.method, p.path, p.body)
				took := time.Since(start)
				if res.Status != http.StatusServiceUnavailable {
					t.Errorf("%s with the database %s: %d %s, want 503", p.name, mode, res.Status, res.Body)
				}
				if p.path != "/api/health" && res.Code() != "SERVICE_UNAVAILABLE" {
					t.Errorf("%s with the database %s: code %q, want SERVICE_UNAVAILABLE", p.name, mode, res.Code())
				}
				if took > outageBound {
					t.Errorf("%s with the database %s took %s, want an answer within %s", p.name, mode, took.Round(time.Millisecond), outageBound)
				}
			}

			proxy.Set(netfault.Up)
			deadline := time.Now().Add(15 * time.Second)
			for {
				res := c.Do("GET", "/api/health", nil)
				if res.Status == http.StatusOK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("health still %d 15s after the database came back: %s", res.Status, res.Body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			expectUp(t)
		})
	}
}
