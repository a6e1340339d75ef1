package resilience_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// confirmPath is where the test's client page would live; the mailed link
// is this URL with token=<hex> added.
const confirmPath = "/account/confirm"

// fastMail makes a server retry and recover quickly, so an outage test
// takes seconds: the behaviour is the production one, only the clock
// constants shrink.
func fastMail(env map[string]string) map[string]string {
	env["PLATFORM_MAIL_POLL_INTERVAL"] = "50ms"
	env["PLATFORM_MAIL_RETRY_BASE"] = "100ms"
	env["PLATFORM_MAIL_LEASE"] = "3s"
	return env
}

// changeMails returns the delivered profile-change confirmations, by
// recipient, failing the test if any Message-ID arrived twice.
func changeMails(t *testing.T, smtp *mailtest.Server) map[string][]mailtest.Message {
	t.Helper()
	byRcpt := map[string][]mailtest.Message{}
	seen := map[string]int{}
	for _, m := range smtp.Messages() {
		seen[m.MessageID]++
		if !strings.Contains(m.Link(), confirmPath+"?token=") {
			continue
		}
		for _, to := range m.To {
			byRcpt[strings.ToLower(to)] = append(byRcpt[strings.ToLower(to)], m)
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("message %s was delivered %d times", id, n)
		}
	}
	return byRcpt
}

// waitForChangeMails waits until every address in want has its
// confirmation and the outbox holds nothing pending or in flight: from
// then on no worker delivers again, so a duplicate would already show.
func waitForChangeMails(t *testing.T, db *store.DB, smtp *mailtest.Server, want []string, within time.Duration) map[string][]mailtest.Message {
	t.Helper()
	testwait.Nil(t, within, func() error {
		got := changeMails(t, smtp)
		missing := 0
		for _, addr := range want {
			if len(got[strings.ToLower(addr)]) == 0 {
				missing++
			}
		}
		if missing > 0 || !outboxSettled(t, db) {
			return fmt.Errorf("%d of %d confirmation mails still missing (or the outbox still busy)", missing, len(want))
		}
		return nil
	})
	return changeMails(t, smtp)
}

// outboxSettled reports whether no message is pending or being sent.
func outboxSettled(t *testing.T, db *store.DB) bool {
	t.Helper()
	for _, status := range []mail.Status{mail.StatusPending, mail.StatusSending} {
		msgs, err := db.Mail().ListMail(t.Context(), mail.Filter{Status: status, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > 0 {
			return false
		}
	}
	return true
}

// openStore opens the database a `serve` process under test uses.
func openStore(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSMTPOutageDuringRequests makes profile-change requests while the
// SMTP relay is down. Every request must succeed at once (the mail waits
// in the outbox); once the relay is back every mail must arrive exactly
// once, and every token in them must confirm its change.
func TestSMTPOutageDuringRequests(t *testing.T) {
	smtpAddr := mailtest.ReserveAddr(t)
	env := fastMail(map[string]string{})
	opts := []apitest.Option{apitest.WithEnv("PLATFORM_SMTP_URL", "smtp://"+smtpAddr+"?tls=none")}
	for k, v := range env {
		opts = append(opts, apitest.WithEnv(k, v))
	}
	srv := apitest.New(t, opts...)

	const players = 6
	var emails []string
	nicknames := map[string]string{}
	for i := range players {
		acct := srv.SignUpPlayer(t)
		nick := fmt.Sprintf("outage%d_%s", i, acct.User.ID.String()[:6])
		res := acct.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{
			"name": "Renamed", "nickname": nick, "callbackURL": srv.URL + confirmPath})
		if res.Status != http.StatusOK {
			t.Fatalf("request with SMTP down: %d %s", res.Status, res.Body)
		}
		emails = append(emails, acct.User.Email)
		nicknames[strings.ToLower(acct.User.Email)] = nick
	}

	// Let the worker fail against the dead relay a few times.
	testwait.Nil(t, 30*time.Second, func() error {
		msgs, err := srv.App.DB.Mail().ListMail(t.Context(), mail.Filter{Status: mail.StatusPending, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Attempts >= 2 {
				return nil
			}
		}
		return fmt.Errorf("the worker did not retry against the dead relay: %+v", msgs)
	})
	smtp := mailtest.StartAt(t, smtpAddr, mailtest.Options{})
	got := waitForChangeMails(t, srv.App.DB, smtp, emails, 30*time.Second)

	anonymous := srv.Client(t)
	for addr, msgs := range got {
		if len(msgs) != 1 {
			t.Errorf("%s got %d confirmation mails, want 1", addr, len(msgs))
			continue
		}
		res := anonymous.Do("POST", "/api/profile/confirm-change", map[string]string{"token": msgs[0].Token()})
		var body struct {
			User struct{ Nickname string }
		}
		res.Decode(t, &body)
		if res.Status != http.StatusOK || body.User.Nickname != nicknames[addr] {
			t.Errorf("confirm for %s: %d %s, want 200 with nickname %s", addr, res.Status, res.Body, nicknames[addr])
		}
	}
}

// TestSIGKILLDuringDelivery kills a serve process while its mail worker
// is in the middle of SMTP conversations. After a restart on the same
// database every confirmation mail must be delivered exactly once and
// its token must work.
func TestSIGKILLDuringDelivery(t *testing.T) {
	smtp := mailtest.Start(t, mailtest.Options{})
	stalled := smtp.StallRecipients()
	env := fastMail(map[string]string{
		"PLATFORM_DATABASE_URL": storetest.URL(t),
		"PLATFORM_SMTP_URL":     smtp.URL(),
	})
	first := startServe(t, env)

	const players = 4
	var emails []string
	for i := range players {
		cookie, email := first.signUpWithEmail(t)
		status, body := call(t, first.URL, "POST", "/api/profile/request-profile-change", cookie,
			map[string]string{"name": "Renamed", "nickname": fmt.Sprintf("kill%d_%d", i, time.Now().UnixNano()%1e6), "callbackURL": first.URL + confirmPath})
		if status != http.StatusOK {
			t.Fatalf("request: %d %s", status, body)
		}
		emails = append(emails, email)
	}

	// The worker is now inside an SMTP conversation that will not finish.
	select {
	case <-stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never started delivering")
	}
	first.signal(syscall.SIGKILL)
	first.wait(10 * time.Second)
	smtp.Release()
	if n := len(changeMails(t, smtp)); n != 0 {
		t.Fatalf("%d messages were delivered before the kill; the test needs them in flight", n)
	}

	// A new process on the same database takes the killed one's messages
	// over once their lease lapses.
	delete(env, "PLATFORM_ADDR")
	second := startServe(t, env)
	got := waitForChangeMails(t, openStore(t, env["PLATFORM_DATABASE_URL"]), smtp, emails, 30*time.Second)
	for _, addr := range emails {
		msgs := got[strings.ToLower(addr)]
		if len(msgs) != 1 {
			t.Errorf("%s got %d confirmation mails, want 1", addr, len(msgs))
			continue
		}
		if status, body := call(t, second.URL, "POST", "/api/profile/confirm-change", "", map[string]string{"token": msgs[0].Token()}); status != http.StatusOK {
			t.Errorf("confirm for %s after the restart: %d %s", addr, status, body)
		}
	}

	// The outbox shows the killed attempts: the messages that were in
	// flight took a second attempt, by the new process.
	db, err := store.Open(t.Context(), env["PLATFORM_DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msgs, err := db.Mail().ListMail(t.Context(), mail.Filter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	retried := 0
	for _, m := range msgs {
		if m.Template == mail.TemplateProfileChange && m.Status == mail.StatusSent && m.Attempts >= 2 {
			retried++
		}
	}
	if retried == 0 {
		t.Errorf("no sent message shows a second attempt; the kill did not interrupt a delivery")
	}
}

// TestTwoServersOneDatabase runs two serve processes on one database:
// requests go to either, both workers deliver, and confirmations race
// across the two. No mail may go out twice, no confirmation may be lost,
// and a token confirmed on both servers at once works exactly once.
func TestTwoServersOneDatabase(t *testing.T) {
	smtp := mailtest.Start(t, mailtest.Options{})
	env := fastMail(map[string]string{
		"PLATFORM_DATABASE_URL": storetest.URL(t),
		"PLATFORM_SMTP_URL":     smtp.URL(),
	})
	servers := []*serveProc{startServe(t, env), startServe(t, env)}
	// One worker may win every mail of a round; rounds repeat until both
	// processes' workers have delivered, so the single deliveries held
	// while they competed for the outbox.
	const rounds = 4
	for range rounds {
		twinServersRound(t, servers, smtp, env["PLATFORM_DATABASE_URL"])
		if t.Failed() || len(senders(t, env["PLATFORM_DATABASE_URL"])) >= 2 {
			return
		}
	}
	t.Errorf("after %d rounds only one worker sent the mail (%v); the test wants both processes delivering",
		rounds, senders(t, env["PLATFORM_DATABASE_URL"]))
}

// twinServersRound has eight new players ask for a profile change, each
// on one of servers, and confirms every token on both servers at once.
func twinServersRound(t *testing.T, servers []*serveProc, smtp *mailtest.Server, dbURL string) {
	t.Helper()
	const players = 8
	type player struct{ cookie, email, nick string }
	var ps []player
	for i := range players {
		cookie, email := servers[i%2].signUpWithEmail(t)
		ps = append(ps, player{cookie, email, fmt.Sprintf("twin%d_%d", i, time.Now().UnixNano()%1e6)})
	}
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			srv := servers[i%2]
			status, body := call(t, srv.URL, "POST", "/api/profile/request-profile-change", p.cookie,
				map[string]string{"name": "Twin", "nickname": p.nick, "callbackURL": srv.URL + confirmPath})
			if status != http.StatusOK {
				t.Errorf("request on server %d: %d %s", i%2, status, body)
			}
		})
	}
	wg.Wait()

	var emails []string
	for _, p := range ps {
		emails = append(emails, p.email)
	}
	got := waitForChangeMails(t, openStore(t, dbURL), smtp, emails, 30*time.Second)

	// Each token is confirmed on both servers at the same moment.
	for _, p := range ps {
		msgs := got[strings.ToLower(p.email)]
		if len(msgs) != 1 {
			t.Errorf("%s got %d confirmation mails, want 1", p.email, len(msgs))
			continue
		}
		token := msgs[0].Token()
		statuses := make([]int, 2)
		var race sync.WaitGroup
		for j, srv := range servers {
			race.Go(func() {
				statuses[j], _ = call(t, srv.URL, "POST", "/api/profile/confirm-change", "", map[string]string{"token": token})
			})
		}
		race.Wait()
		ok := 0
		for _, s := range statuses {
			switch s {
			case http.StatusOK:
				ok++
			case http.StatusBadRequest:
			default:
				t.Errorf("confirm for %s answered %d", p.email, s)
			}
		}
		if ok != 1 {
			t.Errorf("token of %s confirmed %d times across the two servers (statuses %v), want exactly once", p.email, ok, statuses)
		}
	}

}

// senders returns the workers that sent profile-change mail, from the
// outbox's attempt log.
func senders(t *testing.T, dbURL string) map[string]int {
	t.Helper()
	ctx := t.Context()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msgs, err := db.Mail().ListMail(ctx, mail.Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range msgs {
		if m.Template != mail.TemplateProfileChange {
			continue
		}
		_, attempts, err := db.Mail().GetMail(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attempts {
			if a.Outcome == mail.OutcomeSent {
				out[a.Worker]++
			}
		}
	}
	return out
}

// call sends a JSON request as a same-origin browser page would, with
// cookie when set, and returns the status and body.
func call(t *testing.T, base, method, path, cookie string, body any) (int, []byte) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}
