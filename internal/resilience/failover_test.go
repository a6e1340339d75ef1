package resilience_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// The failover tests need pg_auto_failover and root (the nodes run as the
// postgres user); scripts/failover.sh runs them, and CI runs its short
// variant.
const haEnv = "PLATFORM_TEST_HA"

// haFormation is a monitor, a primary and a synchronous standby started
// by scripts/ha.sh.
type haFormation struct {
	t   *testing.T
	dir string
	URL string
}

func startHA(t *testing.T) *haFormation {
	t.Helper()
	if os.Getenv(haEnv) != "1" {
		t.Skip("needs pg_auto_failover and root; set " + haEnv + "=1 or run scripts/failover.sh")
	}
	// The postgres user must reach the data directories: t.TempDir is
	// private to this user.
	parent, err := os.MkdirTemp("", "platformctl-ha-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &haFormation{t: t, dir: filepath.Join(parent, "formation")}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("formation state:\n%s", h.try("state"))
		}
		h.try("down")
		os.RemoveAll(parent)
	})
	out := h.run("up")
	h.URL = out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	h.URL = strings.TrimSpace(h.URL)
	return h
}

func (h *haFormation) try(verb string) string {
	out, _ := exec.Command("../../scripts/ha.sh", verb, h.dir).CombinedOutput()
	return string(out)
}

// run runs a verb of scripts/ha.sh and returns its output.
func (h *haFormation) run(verb string) string {
	h.t.Helper()
	cmd := exec.Command("../../scripts/ha.sh", verb, h.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("ha.sh %s: %v\n%s", verb, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// haRequestTimeout is serve's request deadline in these tests: a request
// still unanswered this long after it began (plus a second's grace) hangs.
const haRequestTimeout = 10 * time.Second

// haOutcome is one request of the load.
type haOutcome struct {
	op          string
	write       bool
	status      int
	retryAfter  string
	err         string
	start, end  time.Time
	afterRetry  bool // the request followed a 503 of the same worker
	description string
}

// haLoad is the mixed load of two replicas: sign-ups, profile changes
// that queue mail, lobby joins and leaves, and open event streams. It
// logs every acknowledged write so that the test can look for it after
// the failover.
type haLoad struct {
	servers []*serveProc
	mu      sync.Mutex
	results []haOutcome
	signups []string // emails of acknowledged sign-ups
	changes []string // emails whose profile change was acknowledged
	streams []*streamWatch
}

func (l *haLoad) record(o haOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results = append(l.results, o)
}

func (l *haLoad) outcomes() []haOutcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]haOutcome(nil), l.results...)
}

// send makes one request as a same-origin page and records it.
func (l *haLoad) send(ctx context.Context, srv *serveProc, op string, write, afterRetry bool, method, path, cookie string, body any) (int, []byte, http.Header) {
	raw, _ := json.Marshal(body)
	o := haOutcome{op: op, write: write, start: time.Now(), afterRetry: afterRetry}
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", srv.URL)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	res, err := (&http.Client{Timeout: haRequestTimeout + time.Second}).Do(req)
	o.end = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, nil // the load stopped
		}
		o.err = err.Error()
		l.record(o)
		return 0, nil, nil
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	o.end = time.Now()
	o.status, o.retryAfter = res.StatusCode, res.Header.Get("Retry-After")
	if res.StatusCode >= 400 {
		o.description = string(out)
	}
	l.record(o)
	return res.StatusCode, out, res.Header
}

// signUpAndChange signs fresh players up and has each request a profile
// change, whose confirmation mail the outbox must deliver.
func (l *haLoad) signUpAndChange(ctx context.Context, worker int) {
	for i := 0; ctx.Err() == nil; i++ {
		srv := l.servers[i%len(l.servers)]
		nick := fmt.Sprintf("ha%d_%d_%d", worker, i, time.Now().UnixNano()%1e9)
		email := nick + "@example.com"
		status, _, header := l.send(ctx, srv, "sign-up", true, false, "POST", "/api/auth/player/sign-up/email", "",
			map[string]any{"name": "HA " + nick, "nickname": nick, "email": email, "password": apitest.DefaultPassword})
		if status != http.StatusOK {
			pause(ctx, status)
			continue
		}
		var cookies []string
		for _, c := range (&http.Response{Header: header}).Cookies() {
			cookies = append(cookies, c.Name+"="+c.Value)
		}
		l.mu.Lock()
		l.signups = append(l.signups, email)
		l.mu.Unlock()
		status, _, _ = l.send(ctx, srv, "profile-change", true, false, "POST", "/api/profile/request-profile-change",
			strings.Join(cookies, "; "), map[string]string{"name": "Changed", "nickname": nick + "x", "callbackURL": srv.URL + confirmPath})
		if status == http.StatusOK {
			l.mu.Lock()
			l.changes = append(l.changes, email)
			l.mu.Unlock()
		}
		pause(ctx, status)
	}
}

// joinAndLeave has a player join the host's lobby and leave it, over and
// over. After a 503 the previous step may or may not have committed, so
// the next step may find the player already in (or already out of) the
// lobby: a 4xx then is the client's stale view, not a fault.
func (l *haLoad) joinAndLeave(ctx context.Context, worker int, cookie, lobbyID string) {
	afterRetry := false
	for i := 0; ctx.Err() == nil; i++ {
		srv := l.servers[(i+worker)%len(l.servers)]
		path, body := "/api/player/lobbies/join", any(map[string]string{"lobbyId": lobbyID})
		op := "lobby-join"
		if i%2 == 1 {
			path, body, op = "/api/player/lobbies/"+lobbyID+"/leave", struct{}{}, "lobby-leave"
		}
		status, _, _ := l.send(ctx, srv, op, true, afterRetry, "POST", path, cookie, body)
		afterRetry = status == http.StatusServiceUnavailable || (afterRetry && status >= 400 && status < 500)
		pause(ctx, status)
	}
}

// pause waits a little between requests, longer after a refusal, as a
// client honouring Retry-After would.
func pause(ctx context.Context, status int) {
	d := 20 * time.Millisecond
	if status == http.StatusServiceUnavailable {
		d = 250 * time.Millisecond
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// streamWatch is one player's event stream, reopened as EventSource does
// whenever it ends; it notes when each snapshot arrives.
type streamWatch struct {
	mu        sync.Mutex
	snapshots []time.Time
	opens     int
}

func (s *streamWatch) lastSnapshot() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.snapshots) == 0 {
		return time.Time{}
	}
	return s.snapshots[len(s.snapshots)-1]
}

func (l *haLoad) watch(ctx context.Context, srv *serveProc, cookie string, s *streamWatch) {
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/player/events", nil)
		if err != nil {
			panic(err)
		}
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Accept", "text/event-stream")
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				l.record(haOutcome{op: "events", start: start, end: time.Now(), err: err.Error()})
			}
			pause(ctx, http.StatusServiceUnavailable)
			continue
		}
		if res.StatusCode != http.StatusOK {
			l.record(haOutcome{op: "events", start: start, end: time.Now(), status: res.StatusCode, retryAfter: res.Header.Get("Retry-After")})
			res.Body.Close()
			pause(ctx, http.StatusServiceUnavailable)
			continue
		}
		s.mu.Lock()
		s.opens++
		s.mu.Unlock()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if sc.Text() == "event: snapshot" {
				s.mu.Lock()
				s.snapshots = append(s.snapshots, time.Now())
				s.mu.Unlock()
			}
		}
		res.Body.Close()
		pause(ctx, http.StatusServiceUnavailable)
	}
}

// start runs the load until ctx ends; wait returns when every worker has.
func (l *haLoad) start(t *testing.T, ctx context.Context) (wait func()) {
	t.Helper()
	host := cookieOf(l.servers[0].signUpWithEmail(t))
	status, body, _ := l.send(ctx, l.servers[0], "lobby-create", true, false, "POST", "/api/player/lobbies", host,
		map[string]string{"queue": "custom-hosted", "visibility": "public"})
	var created struct {
		Lobby struct{ ID string } `json:"lobby"`
	}
	if (status != http.StatusOK && status != http.StatusCreated) || json.Unmarshal(body, &created) != nil {
		t.Fatalf("create lobby: %d %s", status, body)
	}
	var wg sync.WaitGroup
	for w := range 2 {
		cookie := cookieOf(l.servers[w%2].signUpWithEmail(t))
		wg.Go(func() { l.joinAndLeave(ctx, w, cookie, created.Lobby.ID) })
		wg.Go(func() { l.signUpAndChange(ctx, w) })
	}
	for i := range 4 {
		srv := l.servers[i%2]
		cookie := cookieOf(srv.signUpWithEmail(t))
		s := &streamWatch{}
		l.streams = append(l.streams, s)
		wg.Go(func() { l.watch(ctx, srv, cookie, s) })
	}
	return wg.Wait
}

// firstWriteAfter is when the first write that began after t succeeded.
func firstWriteAfter(results []haOutcome, t time.Time) time.Time {
	var first time.Time
	for _, o := range results {
		if o.write && o.status/100 == 2 && o.start.After(t) && (first.IsZero() || o.end.Before(first)) {
			first = o.end
		}
	}
	return first
}

// recoveredAfter is when writes came back after the kill at t: the first
// write to succeed that began after the first write to fail. Backends of
// a killed postmaster live on for a moment, and commits on them that the
// standby confirmed are no outage.
func recoveredAfter(results []haOutcome, t time.Time) time.Time {
	var failed time.Time
	for _, o := range results {
		if o.write && o.status/100 != 2 && o.end.After(t) && (failed.IsZero() || o.end.Before(failed)) {
			failed = o.end
		}
	}
	if failed.IsZero() {
		return time.Time{}
	}
	return firstWriteAfter(results, failed)
}

// startReplicasOn starts two serve processes on the formation's URL, with
// a fast mail worker and short job periods, and an SMTP server.
func startReplicasOn(t *testing.T, dbURL string) ([]*serveProc, *mailtest.Server) {
	t.Helper()
	smtp := mailtest.Start(t, mailtest.Options{})
	env := fastMail(map[string]string{
		"PLATFORM_DATABASE_URL":             dbURL,
		"PLATFORM_SMTP_URL":                 smtp.URL(),
		"PLATFORM_RATE_LIMIT_LOGIN_IP":      "off",
		"PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT": "off",
		"PLATFORM_RATE_LIMIT_MAIL_IP":       "off",
		"PLATFORM_RATE_LIMIT_MAIL_ACCOUNT":  "off",
		"PLATFORM_REQUEST_TIMEOUT":          haRequestTimeout.String(),
		"PLATFORM_SWEEP_INTERVAL":           sweepEvery.String(),
		"PLATFORM_LOBBY_SWEEP_INTERVAL":     sweepEvery.String(),
		"PLATFORM_MAIL_SWEEP_INTERVAL":      sweepEvery.String(),
	})
	a := startServe(t, env) // migrates first, alone
	return []*serveProc{a, startServe(t, env)}, smtp
}

// haReport is what a failover or switchover run measured.
type haReport struct {
	Event          string         `json:"event"`
	Victim         string         `json:"victim,omitempty"`
	RecoverySec    float64        `json:"killToFirstWriteSeconds"`
	DetectionSec   float64        `json:"detectionSeconds"`
	PromotionSec   float64        `json:"promotionSeconds"`
	ReconnectSec   float64        `json:"reconnectSeconds"`
	Requests       int            `json:"requests"`
	Failed         map[string]int `json:"failedByStatus"` // status (or "error") -> count
	Bad            int            `json:"badResponses"`   // neither 2xx nor 503 with Retry-After
	AckedWrites    int            `json:"ackedWrites"`
	LostWrites     int            `json:"lostWrites"`
	Mails          int            `json:"mailsExpected"`
	DuplicateMails int            `json:"duplicateDeliveries"`
}

// judge counts the outcomes: a failure is fine when it is a 503 with
// Retry-After, or a 4xx that follows a 503 of the same worker.
func judge(t *testing.T, results []haOutcome, r *haReport) {
	t.Helper()
	r.Requests = len(results)
	r.Failed = map[string]int{}
	for _, o := range results {
		if o.err == "" && o.status/100 == 2 {
			continue
		}
		key := fmt.Sprint(o.status)
		if o.err != "" {
			key = "error"
		}
		r.Failed[key]++
		clean := o.err == "" && ((o.status == http.StatusServiceUnavailable && o.retryAfter != "") ||
			(o.afterRetry && o.status/100 == 4))
		if !clean {
			r.Bad++
			if r.Bad <= 10 {
				t.Errorf("%s at +%s: status %d, Retry-After %q, error %q, took %s: %s", o.op, o.start.Format("15:04:05.000"),
					o.status, o.retryAfter, o.err, o.end.Sub(o.start).Round(time.Millisecond), o.description)
			}
		}
	}
}

// checkDurable looks for every acknowledged sign-up in the database and
// for the confirmation mail of every acknowledged profile change.
func checkDurable(t *testing.T, dbURL string, load *haLoad, smtp *mailtest.Server, r *haReport) {
	t.Helper()
	db := openStore(t, dbURL)
	load.mu.Lock()
	signups, changes := append([]string(nil), load.signups...), append([]string(nil), load.changes...)
	load.mu.Unlock()
	r.AckedWrites, r.Mails = len(signups), len(changes)
	present := map[string]bool{}
	rows, err := db.SQL().QueryContext(t.Context(), "SELECT email FROM users WHERE email = ANY($1)", signups)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		present[e] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for _, e := range signups {
		if !present[e] {
			r.LostWrites++
			t.Errorf("the acknowledged sign-up of %s is not in the database", e)
		}
	}
	testwait.For(t, 60*time.Second, "confirmation mail for every acknowledged change", func() bool {
		byRcpt := mailIDs(smtp)
		for _, e := range changes {
			if len(byRcpt[e]) == 0 {
				return false
			}
		}
		return outboxSettled(t, db)
	})
	for _, e := range changes {
		ids := mailIDs(smtp)[e]
		distinct := map[string]bool{}
		for _, id := range ids {
			distinct[id] = true
		}
		r.DuplicateMails += len(ids) - len(distinct)
		if len(distinct) != 1 {
			t.Errorf("%s got confirmation mails with %d different Message-IDs, want one", e, len(distinct))
		}
	}
}

// mailIDs returns the Message-IDs of the delivered confirmations, by
// recipient, repeated as often as each was delivered.
func mailIDs(smtp *mailtest.Server) map[string][]string {
	out := map[string][]string{}
	for _, m := range smtp.Messages() {
		if !strings.Contains(m.Link(), confirmPath+"?token=") {
			continue
		}
		for _, to := range m.To {
			out[strings.ToLower(to)] = append(out[strings.ToLower(to)], m.MessageID)
		}
	}
	return out
}

// waitForResync waits until every event stream, still open or opened
// again, has had a snapshot since the event.
func waitForResync(t *testing.T, load *haLoad, since time.Time) {
	t.Helper()
	testwait.For(t, 30*time.Second, "fresh snapshot on every event stream", func() bool {
		for _, s := range load.streams {
			if !s.lastSnapshot().After(since) {
				return false
			}
		}
		return true
	})
}

// checkCarriesOn waits until the job runner has claimed periods since the
// event, then asks each replica twenty times for a page that reads the
// database: a dead pooled connection would fail one of them.
func checkCarriesOn(t *testing.T, dbURL string, servers []*serveProc, runsBefore int64, cookie string) {
	t.Helper()
	db := openStore(t, dbURL)
	testwait.For(t, 30*time.Second, "job periods claimed after the event", func() bool { return jobRuns(t, db.SQL()) > runsBefore })
	for _, srv := range servers {
		for i := range 20 {
			if status, body := call(t, srv.URL, "GET", "/api/player/bootstrap", cookie, nil); status != http.StatusOK {
				t.Errorf("request %d to %s after recovery: %d %s", i, srv.URL, status, body)
			}
		}
	}
}

func jobRuns(t *testing.T, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(t.Context(), "SELECT coalesce(sum(runs), 0) FROM job_runs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// breakdown reads the monitor's event log: when it first reacted to the
// event (detection) and when another node reported itself primary
// (promotion), in seconds from since.
func (h *haFormation) breakdown(t *testing.T, since time.Time, victim string) (detect, promote float64) {
	t.Helper()
	port := os.Getenv("HA_PORT")
	if port == "" {
		port = "6000"
	}
	mon, err := sql.Open("pgx", "postgres://autoctl_node@127.0.0.1:"+port+"/pg_auto_failover?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	rows, err := mon.QueryContext(t.Context(), `SELECT eventtime, nodename, reportedstate::text FROM pgautofailover.event
		WHERE eventtime > $1 ORDER BY eventid`, since)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var at time.Time
		var node, state string
		if err := rows.Scan(&at, &node, &state); err != nil {
			t.Fatal(err)
		}
		if detect == 0 {
			detect = at.Sub(since).Seconds()
		}
		if promote == 0 && node != victim && (state == "wait_primary" || state == "primary") {
			promote = at.Sub(since).Seconds()
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return detect, promote
}

// writeReport logs the report and, when PLATFORM_HA_REPORT names a file,
// appends it there as one JSON line for scripts/failover.sh.
func writeReport(t *testing.T, r haReport) {
	t.Helper()
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %s", line)
	if path := os.Getenv("PLATFORM_HA_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFailover kills the primary's postmaster under the mixed
// load of two replicas, waits for pg_auto_failover to promote the standby,
// and checks what players saw: only 2xx and clean 503s, every acknowledged
// sign-up kept, every acknowledged change mailed with one Message-ID,
// streams resynced, jobs running, and no dead connection left behind.
func TestFailover(t *testing.T) {
	ha := startHA(t)
	servers, smtp := startReplicasOn(t, ha.URL)
	load := &haLoad{servers: servers}
	ctx, stop := context.WithCancel(t.Context())
	wait := load.start(t, ctx)
	acked := func() int {
		load.mu.Lock()
		defer load.mu.Unlock()
		return len(load.changes)
	}
	testwait.For(t, 60*time.Second, "acknowledged changes before the kill", func() bool { return acked() >= 3 })
	runsBefore := jobRuns(t, openStore(t, ha.URL).SQL())

	// PLATFORM_HA_KILL=node takes the primary's keeper down with it: a
	// lost machine, which the monitor only fails over after its timeouts.
	verb, within := "kill-primary", 15.0
	if os.Getenv("PLATFORM_HA_KILL") == "node" {
		verb, within = "kill-node", 75
	}
	kill := time.Now()
	victim := ha.run(verb)
	testwait.For(t, 90*time.Second, "a successful write after the outage", func() bool {
		return !recoveredAfter(load.outcomes(), kill).IsZero()
	})
	recovered := recoveredAfter(load.outcomes(), kill)
	waitForResync(t, load, kill)
	ackedAt := acked()
	testwait.For(t, 60*time.Second, "more acknowledged changes after recovery", func() bool { return acked() >= ackedAt+3 })
	stop()
	wait()

	r := haReport{Event: verb, Victim: victim, RecoverySec: recovered.Sub(kill).Seconds()}
	r.DetectionSec, r.PromotionSec = ha.breakdown(t, kill, victim)
	r.ReconnectSec = r.RecoverySec - r.PromotionSec
	judge(t, load.outcomes(), &r)
	checkDurable(t, ha.URL, load, smtp, &r)
	writeReport(t, r)
	checkCarriesOn(t, ha.URL, servers, runsBefore, cookieOf(servers[0].signUpWithEmail(t)))
	if r.RecoverySec > within {
		t.Errorf("writes came back %.1fs after the kill, want within %.0fs", r.RecoverySec, within)
	}
}

// TestSwitchover switches the primary over (pg_autoctl perform
// switchover) under the same load: no request may fail, and the old
// primary comes back as the standby.
func TestSwitchover(t *testing.T) {
	ha := startHA(t)
	servers, smtp := startReplicasOn(t, ha.URL)
	load := &haLoad{servers: servers}
	ctx, stop := context.WithCancel(t.Context())
	wait := load.start(t, ctx)
	acked := func() int {
		load.mu.Lock()
		defer load.mu.Unlock()
		return len(load.changes)
	}
	testwait.For(t, 60*time.Second, "acknowledged changes before the switchover", func() bool { return acked() >= 3 })
	before := filepath.Base(ha.run("primary"))
	begin := time.Now()
	ha.run("switchover")
	ha.run("wait-primary")
	waitForResync(t, load, begin)
	ackedAt := acked()
	testwait.For(t, 60*time.Second, "more acknowledged changes after the switchover", func() bool { return acked() >= ackedAt+3 })
	stop()
	wait()
	after := filepath.Base(ha.run("primary"))
	if after == before {
		t.Errorf("%s is still the primary after the switchover", before)
	}
	r := haReport{Event: "switchover", Victim: before, RecoverySec: time.Since(begin).Seconds()}
	judge(t, load.outcomes(), &r)
	checkDurable(t, ha.URL, load, smtp, &r)
	writeReport(t, r)
	if failed := sumValues(r.Failed); failed > 0 {
		t.Errorf("%d of %d requests failed during a planned switchover (%v); want none", failed, r.Requests, r.Failed)
	}
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
