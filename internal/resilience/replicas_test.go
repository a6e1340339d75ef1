package resilience_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// replicaSet is two serve processes on one PostgreSQL database behind a
// round-robin reverse proxy, as a load balancer runs them. The proxy
// writes the client address a test names in X-Client into
// X-Forwarded-For, and the replicas trust it (PLATFORM_TRUSTED_PROXIES).
type replicaSet struct {
	proxy    *httptest.Server
	replicas []*serveProc
	dbURL    string
}

// sweepEvery is the replicas' job period: short, so the test sees many.
const sweepEvery = 400 * time.Millisecond

// startReplicas starts the set; env overrides the replicas' settings.
func startReplicas(t *testing.T, env map[string]string) *replicaSet {
	t.Helper()
	if os.Getenv("PLATFORM_TEST_DATABASE_URL") == "" {
		t.Skip("replicas share a PostgreSQL database; set PLATFORM_TEST_DATABASE_URL")
	}
	rs := &replicaSet{dbURL: storetest.URL(t)}
	var targets []*url.URL
	var next atomic.Int64
	rs.proxy = httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(targets[next.Add(1)%int64(len(targets))])
		r.Out.Host = r.In.Host
		r.Out.Header.Set("X-Forwarded-For", r.In.Header.Get("X-Client"))
	}})
	t.Cleanup(rs.proxy.Close)
	// The login budgets refill no attempt while a test runs: at 6/1m one
	// came back every 10s, within the ten guesses on a loaded machine.
	full := map[string]string{
		"PLATFORM_DATABASE_URL":             rs.dbURL,
		"PLATFORM_BASE_URL":                 rs.proxy.URL,
		"PLATFORM_TRUSTED_PROXIES":          "127.0.0.1/32",
		"PLATFORM_RATE_LIMIT_LOGIN_IP":      "6/1h",
		"PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT": "4/1h",
		"PLATFORM_SWEEP_INTERVAL":           sweepEvery.String(),
		"PLATFORM_LOBBY_SWEEP_INTERVAL":     sweepEvery.String(),
		"PLATFORM_MAIL_SWEEP_INTERVAL":      sweepEvery.String(),
		"PLATFORM_LIVEOPS_REFRESH":          "200ms",
	}
	for k, v := range env {
		full[k] = v
	}
	for range 2 {
		p := startServe(t, full)
		rs.replicas = append(rs.replicas, p)
		u, err := url.Parse(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, u)
	}
	return rs
}

// send makes a JSON request to base (the proxy or one replica) as a page
// of the site behind the proxy, from the client at ip, and returns the
// status, body and Retry-After.
func (rs *replicaSet) send(t *testing.T, base, method, path, ip, cookie string, body any) (int, []byte, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", rs.proxy.URL)
	req.Header.Set("X-Client", ip)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, out, res.Header.Get("Retry-After")
}

// The budgets are shared: sign-ins spread over both replicas by the proxy
// stop at the configured totals, not twice them.
func TestReplicasShareRateLimits(t *testing.T) {
	rs := startReplicas(t, nil)
	_, email := rs.replicas[0].signUpWithEmail(t)
	wrong := map[string]any{"email": email, "password": "not the password"}
	counted, limited := 0, 0
	for i := range 10 {
		status, body, retry := rs.send(t, rs.proxy.URL, "POST", "/api/auth/player/sign-in/email", fmt.Sprintf("198.51.100.%d", i+1), "", wrong)
		switch status {
		case http.StatusUnauthorized:
			counted++
		case http.StatusTooManyRequests:
			limited++
			if n, err := strconv.Atoi(retry); err != nil || n < 1 {
				t.Errorf("429 without a Retry-After: %q", retry)
			}
		default:
			t.Fatalf("wrong password answered %d %s", status, body)
		}
	}
	if counted != 4 || limited != 6 {
		t.Fatalf("10 guesses at one account across two replicas: %d checked, %d limited; want 4 and 6", counted, limited)
	}
	counted = 0
	for i := range 10 {
		body := map[string]any{"email": fmt.Sprintf("nobody%d@example.com", i), "password": "whatever it is"}
		if status, _, _ := rs.send(t, rs.proxy.URL, "POST", "/api/auth/player/sign-in/email", "203.0.113.7", "", body); status == http.StatusUnauthorized {
			counted++
		}
	}
	if counted != 6 {
		t.Fatalf("one address across two replicas got %d guesses checked; want the limit, 6", counted)
	}
	// A malformed body is refused before it counts: the next address's
	// budget is whole after ten of them.
	for range 10 {
		status, _, _ := rs.send(t, rs.proxy.URL, "POST", "/api/auth/player/sign-in/email", "203.0.113.8", "", map[string]any{"email": "not an email", "password": "x"})
		if status != http.StatusBadRequest {
			t.Fatalf("malformed sign-in answered %d, want 400", status)
		}
	}
	for i := range 6 {
		body := map[string]any{"email": fmt.Sprintf("fresh%d@example.com", i), "password": "whatever it is"}
		if status, _, _ := rs.send(t, rs.proxy.URL, "POST", "/api/auth/player/sign-in/email", "203.0.113.8", "", body); status != http.StatusUnauthorized {
			t.Fatalf("guess %d from an address that only sent malformed bodies answered %d, want 401", i+1, status)
		}
	}
}

// A session signed out on one replica is gone on the other within 100 ms, and
// a live-ops change published anywhere reaches both.
func TestReplicasSeeOneAnother(t *testing.T) {
	rs := startReplicas(t, nil)
	a, b := rs.replicas[0], rs.replicas[1]
	cookie := cookieOf(a.signUpWithEmail(t))
	if status, body, _ := rs.send(t, b.URL, "GET", "/api/auth/player/get-session", "192.0.2.1", cookie, nil); status != http.StatusOK || !bytes.Contains(body, []byte(`"session"`)) {
		t.Fatalf("get-session on b before sign-out: %d %s", status, body)
	}
	if status, body, _ := rs.send(t, a.URL, "POST", "/api/auth/player/sign-out", "192.0.2.1", cookie, map[string]any{}); status != http.StatusOK {
		t.Fatalf("sign-out on a: %d %s", status, body)
	}
	// b had the session cached: it forgets it when a's notice arrives,
	// within milliseconds (TestReplicasRevocationLatency holds the p99).
	testwait.Closely(t, 100*time.Millisecond, func() error {
		status, body, _ := rs.send(t, b.URL, "GET", "/api/auth/player/get-session", "192.0.2.1", cookie, nil)
		if status != http.StatusOK || !bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
			return fmt.Errorf("get-session on b after sign-out on a: %d %s; want null", status, body)
		}
		return nil
	})

	seed := time.Now().UnixNano()%1_000_000_000 + 1
	withApp(t, rs.dbURL, func(app *app.App) {
		if _, err := app.LiveOps.SetSeed(t.Context(), "os:replica-test", string(gamemap.Short), seed, "replica test"); err != nil {
			t.Fatal(err)
		}
	})
	want := []byte(`"seed":"` + strconv.FormatInt(seed, 10) + `"`)
	for _, p := range rs.replicas {
		testwait.Nil(t, 10*time.Second, func() error {
			if _, body, _ := rs.send(t, p.URL, "GET", "/api/matchmaking/queues", "192.0.2.1", "", nil); !bytes.Contains(body, want) {
				return fmt.Errorf("replica %s still serves another short seed after the change: %.300s", p.URL, body)
			}
			return nil
		})
	}
}

// Players joining one lobby through both replicas at once fill it to its
// capacity and not a seat more.
func TestReplicasLobbyRaceKeepsCapacity(t *testing.T) {
	// Sign-ups through the services share one (empty) address.
	rs := startReplicas(t, map[string]string{"PLATFORM_RATE_LIMIT_LOGIN_IP": "100/1m"})
	host := cookieOf(rs.replicas[0].signUpWithEmail(t))
	status, body, _ := rs.send(t, rs.proxy.URL, "POST", "/api/player/lobbies", "192.0.2.2", host,
		map[string]string{"queue": "custom-hosted", "visibility": "public"})
	if status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("create lobby: %d %s", status, body)
	}
	var created struct {
		Lobby struct{ ID string } `json:"lobby"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.Lobby.ID == "" {
		t.Fatalf("create lobby answered %s (%v)", body, err)
	}
	const joiners = 8
	cookies := make([]string, joiners)
	for i := range cookies {
		cookies[i] = cookieOf(rs.replicas[i%2].signUpWithEmail(t))
	}
	var joined atomic.Int64
	var wg sync.WaitGroup
	for i, c := range cookies {
		wg.Go(func() {
			status, body, _ := rs.send(t, rs.replicas[i%2].URL, "POST", "/api/player/lobbies/join", fmt.Sprintf("192.0.2.%d", 10+i), c,
				map[string]string{"lobbyId": created.Lobby.ID})
			switch status {
			case http.StatusOK:
				joined.Add(1)
			case http.StatusConflict:
			default:
				t.Errorf("join answered %d %s", status, body)
			}
		})
	}
	wg.Wait()
	if joined.Load() != 3 {
		t.Fatalf("%d of %d joined a lobby of 4 with its host; want exactly 3", joined.Load(), joiners)
	}
}

// Each period of each job runs once between the two replicas: over a few
// seconds the claims stay within one per period, while both replicas ask
// four times a period. Two replicas that both ran a period would reach
// the runs awaited in half the periods, over the bound.
func TestReplicasRunEachJobOncePerPeriod(t *testing.T) {
	rs := startReplicas(t, nil)
	db, err := store.Open(t.Context(), rs.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	jobs := []string{"expired-sessions", "rate-limit-counters", "idle-lobbies", "overdue-mail"}
	runs := func(job string) int {
		n, err := db.JobRuns().Runs(t.Context(), job)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := map[string]int{}
	for _, job := range jobs {
		start[job] = runs(job)
	}
	const awaited = 8
	began := time.Now()
	testwait.Nil(t, 30*time.Second, func() error {
		for _, job := range jobs {
			if n := runs(job) - start[job]; n < awaited {
				return fmt.Errorf("job %s ran %d times since the test began, want %d", job, n, awaited)
			}
		}
		return nil
	})
	ran := map[string]int{}
	for _, job := range jobs {
		ran[job] = runs(job) - start[job]
	}
	// Taken after the counts, so the bound errs on the generous side.
	elapsed := time.Since(began)
	most := int(elapsed/sweepEvery) + 2
	for _, job := range jobs {
		t.Logf("job %s: %d runs in %s (period %s) across two replicas", job, ran[job], elapsed.Round(time.Millisecond), sweepEvery)
		if ran[job] > most {
			t.Errorf("job %s ran %d times in %s of %s periods across two replicas; want at most %d", job, ran[job], elapsed.Round(time.Millisecond), sweepEvery, most)
		}
	}
	// Both replicas took periods: the holder column changed hands.
	holders := map[string]bool{}
	testwait.Nil(t, 20*sweepEvery, func() error {
		var h string
		storetest.Scan(t, db, &h, "SELECT holder FROM job_runs WHERE name = 'expired-sessions'")
		if holders[h] = true; len(holders) < 2 {
			return fmt.Errorf("one replica took every period (%v); the test wants both asking", holders)
		}
		return nil
	})
}

// withApp runs fn with the services on the replicas' database, as an
// operator's command does.
func withApp(t *testing.T, dbURL string, fn func(*app.App)) {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"PLATFORM_DATABASE_URL": dbURL, "PLATFORM_SECRET": apitest.Secret}[k]
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.WithoutCancel(t.Context()), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), platform.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fn(a)
}

// Terminating every backend of both replicas (a failover, a pooler
// recycling its connections) costs no request: each statement that finds
// its connection dead runs again on another, and health stays up.
func TestReplicasSurviveTerminatedBackends(t *testing.T) {
	rs := startReplicas(t, nil)
	cookie := cookieOf(rs.replicas[0].signUpWithEmail(t))
	db, err := store.Open(t.Context(), rs.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	get := func(path string) int {
		status, _, _ := rs.send(t, rs.proxy.URL, "GET", path, "192.0.2.50", cookie, nil)
		return status
	}
	for range 20 { // warm both pools
		get("/api/player/bootstrap")
	}
	for round := range 3 {
		killed := storetest.Count(t, db, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		if killed == 0 {
			t.Fatalf("round %d: no backends of the replicas to terminate", round)
		}
		failed := 0
		for _, path := range []string{"/api/health", "/api/auth/player/get-session", "/api/player/bootstrap", "/api/health",
			"/api/player/lobbies", "/api/auth/player/get-session", "/api/player/bootstrap", "/api/health"} {
			if status := get(path); status != http.StatusOK {
				failed++
				t.Errorf("round %d: GET %s after terminating %d backends = %d", round, path, killed, status)
			}
		}
		t.Logf("round %d: terminated %d backends; %d of 8 requests failed", round, killed, failed)
	}
}

// cookieOf keeps the Cookie header of signUpWithEmail.
func cookieOf(cookie, _ string) string { return cookie }
