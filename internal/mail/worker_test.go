package mail_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// fastOptions keep outage tests quick: retries within tens of milliseconds.
var fastOptions = mail.WorkerOptions{
	Concurrency:  2,
	PollInterval: 20 * time.Millisecond,
	SendTimeout:  2 * time.Second,
	BackoffBase:  40 * time.Millisecond,
	BackoffMax:   200 * time.Millisecond,
}

type fixture struct {
	url      string
	db       *store.DB
	composer *mail.Composer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	url := storetest.URL(t)
	db, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := db.Migrator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &fixture{url: url, db: db, composer: newComposer(t)}
}

// openAnother is a second connection pool on the same database, as a
// second `serve` process would have.
func (f *fixture) openAnother(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (f *fixture) enqueue(t *testing.T, to string, ttl time.Duration) *mail.Outgoing {
	t.Helper()
	out, err := f.composer.Compose(mail.TemplateVerifyEmail, to, sampleData(), time.Now().Add(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.Mail().EnqueueMail(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *fixture) sender(t *testing.T, srvURL string) mail.Sender {
	t.Helper()
	s, err := mail.NewSMTPSender(mail.SMTPConfig{URL: srvURL, From: "Platform <no-reply@example.com>", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) worker(t *testing.T, db *store.DB, sender mail.Sender, opts mail.WorkerOptions) *mail.Worker {
	return mail.NewWorker(mail.WorkerDeps{Store: db.Mail(), Composer: f.composer, Sender: sender, Log: slog.New(slog.DiscardHandler)}, opts, time.Now)
}

// run starts w in the background; the returned stop cancels it and waits.
func run(t *testing.T, w *mail.Worker) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		w.Run(ctx)
		close(done)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("worker did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (f *fixture) get(t *testing.T, id uuid.UUID) (*mail.Message, []mail.Attempt) {
	t.Helper()
	m, atts, err := f.db.Mail().GetMail(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m, atts
}

func (f *fixture) waitStatus(t *testing.T, id uuid.UUID, want mail.Status, timeout time.Duration) *mail.Message {
	t.Helper()
	var m *mail.Message
	testwait.Nil(t, timeout, func() error {
		if m, _ = f.get(t, id); m.Status != want {
			return fmt.Errorf("message %s is %s, want %s (last error %q)", id, m.Status, want, m.LastError)
		}
		return nil
	})
	return m
}

func (f *fixture) payloadPurged(t *testing.T, id uuid.UUID) bool {
	t.Helper()
	var purged bool
	storetest.Scan(t, f.db, &purged, "SELECT payload IS NULL FROM mail_outbox WHERE id = ?", id)
	return purged
}

func countByMessageID(msgs []mailtest.Message) map[string]int {
	n := map[string]int{}
	for _, m := range msgs {
		n[m.MessageID]++
	}
	return n
}

// The SMTP server is down when the message is enqueued and comes up later:
// the worker keeps retrying with backoff and the message arrives once.
func TestServerDownThenUp(t *testing.T) {
	f := newFixture(t)
	addr := mailtest.ReserveAddr(t)
	out := f.enqueue(t, "ada@example.com", time.Hour)
	w := f.worker(t, f.db, f.sender(t, "smtp://"+addr+"?tls=none"), fastOptions)
	stop := run(t, w)

	// Wait until at least two attempts have failed against the dead port.
	testwait.Nil(t, 10*time.Second, func() error {
		m, _ := f.get(t, out.ID)
		if m.Attempts < 2 || m.Status != mail.StatusPending {
			return fmt.Errorf("no retries while the server is down: %+v", m)
		}
		if m.LastError == "" {
			t.Fatal("failed attempt recorded no error")
		}
		return nil
	})

	srv := mailtest.StartAt(t, addr, mailtest.Options{})
	got := srv.WaitFor(t, 10*time.Second, mailtest.To("ada@example.com"))
	m := f.waitStatus(t, out.ID, mail.StatusSent, 5*time.Second)
	stop()
	if got.MessageID != out.ID.String()+"@example.com" {
		t.Errorf("Message-ID %q", got.MessageID)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Errorf("%d messages delivered, want 1", n)
	}
	_, atts := f.get(t, out.ID)
	if len(atts) != m.Attempts || atts[len(atts)-1].Outcome != mail.OutcomeSent {
		t.Errorf("attempt log %+v does not end in one sent attempt of %d", atts, m.Attempts)
	}
	for _, a := range atts[:len(atts)-1] {
		if a.Outcome != mail.OutcomeRetry || a.Error == "" || a.FinishedAt == nil {
			t.Errorf("earlier attempt %+v, want a finished retry with its error", a)
		}
	}
	if m.SentAt == nil || m.LastError != "" || !f.payloadPurged(t, out.ID) {
		t.Errorf("sent message: sentAt %v, lastError %q, payload purged %v", m.SentAt, m.LastError, f.payloadPurged(t, out.ID))
	}
}

// `serve` stops (its context is cancelled) while the SMTP conversation is
// under way: the message is handed back and a restarted worker delivers
// it, once.
func TestWorkerStoppedMidDelivery(t *testing.T) {
	f := newFixture(t)
	srv := mailtest.Start(t, mailtest.Options{})
	stalled := srv.StallRecipients()
	out := f.enqueue(t, "ada@example.com", time.Hour)

	first := f.worker(t, f.db, f.sender(t, srv.URL()), fastOptions)
	stop := run(t, first)
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never reached RCPT TO")
	}
	stop()
	m, atts := f.get(t, out.ID)
	if m.Status != mail.StatusPending || len(atts) != 1 || atts[0].Outcome != mail.OutcomeInterrupted {
		t.Fatalf("after stop: status %s, attempts %+v; want pending with one interrupted attempt", m.Status, atts)
	}
	srv.Release()

	second := f.worker(t, f.openAnother(t), f.sender(t, srv.URL()), fastOptions)
	stopSecond := run(t, second)
	f.waitStatus(t, out.ID, mail.StatusSent, 10*time.Second)
	stopSecond() // no worker runs now, so the counts below are final
	if n := countByMessageID(srv.Messages())[out.ID.String()+"@example.com"]; n != 1 {
		t.Fatalf("message delivered %d times, want 1", n)
	}
	m, atts = f.get(t, out.ID)
	if m.Attempts != 2 || len(atts) != 2 || atts[1].Outcome != mail.OutcomeSent {
		t.Fatalf("attempts %d, log %+v; want the interrupted attempt then one sent", m.Attempts, atts)
	}
}

// The process dies mid-delivery (its database handle closes under it and
// its context ends): nothing can be handed back, so the lease lapses and
// another worker delivers the message.
func TestWorkerDiesMidDelivery(t *testing.T) {
	f := newFixture(t)
	srv := mailtest.Start(t, mailtest.Options{})
	stalled := srv.StallRecipients()
	out := f.enqueue(t, "ada@example.com", time.Hour)

	opts := fastOptions
	opts.SendTimeout = 300 * time.Millisecond
	opts.Lease = 600 * time.Millisecond
	dying := f.openAnother(t)
	first := f.worker(t, dying, f.sender(t, srv.URL()), opts)
	stop := run(t, first)
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never reached RCPT TO")
	}
	dying.Close()
	stop()
	srv.Release()
	m, _ := f.get(t, out.ID)
	if m.Status != mail.StatusSending {
		t.Fatalf("after the crash the message is %s, want still leased (sending)", m.Status)
	}

	second := f.worker(t, f.db, f.sender(t, srv.URL()), opts)
	stopSecond := run(t, second)
	m = f.waitStatus(t, out.ID, mail.StatusSent, 10*time.Second)
	stopSecond() // no worker runs now, so the counts below are final
	if n := countByMessageID(srv.Messages())[out.ID.String()+"@example.com"]; n != 1 {
		t.Fatalf("message delivered %d times, want 1", n)
	}
	_, atts := f.get(t, out.ID)
	if m.Attempts != 2 || len(atts) != 2 || atts[0].Outcome != mail.OutcomeAbandoned || atts[1].Outcome != mail.OutcomeSent {
		t.Fatalf("attempts %d, log %+v; want the dead worker's attempt abandoned and the second sent", m.Attempts, atts)
	}
	if atts[0].Worker == atts[1].Worker {
		t.Errorf("both attempts by %s", atts[0].Worker)
	}
}

// Two `serve` processes (two pools, two workers of two goroutines each) on
// one database: every message goes out exactly once.
func TestTwoWorkersNeverSendTwice(t *testing.T) {
	f := newFixture(t)
	// Each conversation takes a while, so claims overlap deliveries.
	srv := mailtest.Start(t, mailtest.Options{Delay: 15 * time.Millisecond})
	const n = 40
	ids := make([]uuid.UUID, n)
	for i := range n {
		ids[i] = f.enqueue(t, fmt.Sprintf("player%d@example.com", i), time.Hour).ID
	}
	var stops []func()
	for range 2 {
		w := f.worker(t, f.openAnother(t), f.sender(t, srv.URL()), fastOptions)
		stops = append(stops, run(t, w))
	}
	for _, id := range ids {
		f.waitStatus(t, id, mail.StatusSent, 30*time.Second)
	}
	for _, stop := range stops {
		stop() // no worker runs now, so the counts below are final
	}
	msgs := srv.Messages()
	counts := countByMessageID(msgs)
	if len(msgs) != n || len(counts) != n {
		t.Fatalf("%d deliveries of %d distinct messages, want %d of %d", len(msgs), len(counts), n, n)
	}
	byWorker := map[string]int{}
	for _, id := range ids {
		m, atts := f.get(t, id)
		if m.Attempts != 1 || len(atts) != 1 || atts[0].Outcome != mail.OutcomeSent || counts[id.String()+"@example.com"] != 1 {
			t.Errorf("message %s: %d attempts (log %+v), delivered %d times", id, m.Attempts, atts, counts[id.String()+"@example.com"])
			continue
		}
		byWorker[atts[0].Worker]++
	}
	t.Logf("messages per worker: %v", byWorker)
}

// A 5xx reply is permanent: the message fails after one attempt and no
// worker tries it again.
func TestPermanentFailureNotRetried(t *testing.T) {
	f := newFixture(t)
	srv := mailtest.Start(t, mailtest.Options{Reject: func(rcpt string) error {
		if rcpt == "gone@example.com" {
			return mailtest.Refuse(550, "mailbox unavailable")
		}
		return nil
	}})
	bad := f.enqueue(t, "gone@example.com", time.Hour)
	good := f.enqueue(t, "ada@example.com", time.Hour)
	w := f.worker(t, f.db, f.sender(t, srv.URL()), fastOptions)
	n, err := w.DeliverDue(t.Context())
	if err != nil || n != 2 {
		t.Fatalf("DeliverDue = %d, %v; want 2 attempts", n, err)
	}
	m, atts := f.get(t, bad.ID)
	if m.Status != mail.StatusFailed || m.Attempts != 1 || len(atts) != 1 || atts[0].SMTPCode != 550 || atts[0].Outcome != mail.OutcomeFailed {
		t.Fatalf("refused message: %+v, attempts %+v", m, atts)
	}
	f.waitStatus(t, good.ID, mail.StatusSent, time.Second)
	// Later passes leave it alone.
	for range 3 {
		if n, err := w.DeliverDue(t.Context()); err != nil || n != 0 {
			t.Fatalf("a later pass made %d attempts (%v)", n, err)
		}
	}
	if m, atts := f.get(t, bad.ID); m.Status != mail.StatusFailed || m.Attempts != 1 || len(atts) != 1 {
		t.Fatalf("after later passes the refused message is %s with %d attempts (log %+v); want failed after one", m.Status, m.Attempts, atts)
	}
	if got := srv.Recipients(); len(got) != 2 {
		t.Fatalf("server saw RCPT TO %v, want each address once", got)
	}
}

// A temporary failure schedules a retry with backoff inside the bounds.
func TestTemporaryFailureBacksOff(t *testing.T) {
	f := newFixture(t)
	srv := mailtest.Start(t, mailtest.Options{Reject: func(string) error { return mailtest.Refuse(451, "greylisted") }})
	out := f.enqueue(t, "ada@example.com", time.Hour)
	opts := fastOptions
	opts.BackoffBase, opts.BackoffMax = time.Minute, 10*time.Minute
	w := f.worker(t, f.db, f.sender(t, srv.URL()), opts)
	before := time.Now()
	if n, err := w.DeliverDue(t.Context()); err != nil || n != 1 {
		t.Fatalf("DeliverDue = %d, %v", n, err)
	}
	m, atts := f.get(t, out.ID)
	if m.Status != mail.StatusPending || atts[0].Outcome != mail.OutcomeRetry || atts[0].SMTPCode != 451 {
		t.Fatalf("after a 451: %+v, %+v", m, atts)
	}
	// First retry: base·2^0 with equal jitter, so between 30s and 60s.
	if wait := m.NextAttemptAt.Sub(before); wait < 29*time.Second || wait > 61*time.Second {
		t.Fatalf("next attempt in %s, want 30s-60s", wait)
	}
	if n, _ := w.DeliverDue(t.Context()); n != 0 {
		t.Fatal("retried before its time")
	}
}

// Once the link in a message has expired, the overdue-mail job (here run
// beside the worker, as serve's job runner does) gives up on it instead of
// delivering a dead link, even when the server comes back.
func TestExpiredMessageNotSent(t *testing.T) {
	f := newFixture(t)
	addr := mailtest.ReserveAddr(t)
	out := f.enqueue(t, "ada@example.com", 400*time.Millisecond)
	w := f.worker(t, f.db, f.sender(t, "smtp://"+addr+"?tls=none"), fastOptions)
	stop := run(t, w)
	ctx, cancel := context.WithCancel(t.Context())
	sweeps := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if _, err := w.ExpireOverdue(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
				sweeps <- err
				return
			}
			// The sweep's own period, as the job runner would run it.
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		sweeps <- nil
	}()
	m := f.waitStatus(t, out.ID, mail.StatusExpired, 10*time.Second)
	cancel()
	if err := <-sweeps; err != nil {
		t.Fatal(err)
	}
	stop()
	if m.Attempts == 0 || m.LastError == "" {
		t.Errorf("expired message: %d attempts, last error %q; want the failed attempts kept", m.Attempts, m.LastError)
	}
	if !f.payloadPurged(t, out.ID) {
		t.Error("expired message kept its payload")
	}
	srv := mailtest.StartAt(t, addr, mailtest.Options{})
	if n, err := w.DeliverDue(t.Context()); err != nil || n != 0 {
		t.Fatalf("DeliverDue after expiry = %d, %v", n, err)
	}
	if len(srv.Messages()) != 0 {
		t.Fatal("an expired message was delivered")
	}
}

// Support staff retry a failed message; every retry is audited and the
// rules (failed only, link still valid) hold.
func TestOutboxRetry(t *testing.T) {
	f := newFixture(t)
	refuse := true
	var mu sync.Mutex
	srv := mailtest.Start(t, mailtest.Options{Reject: func(string) error {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			return mailtest.Refuse(550, "mailbox full")
		}
		return nil
	}})
	auditLog := audit.New(f.db.Audit(), time.Now)
	// The outbox's clock runs ahead by skew, so a link can expire without
	// the test waiting for it.
	var skew atomic.Int64
	outbox := mail.NewOutbox(f.db.Mail(), auditLog, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	w := f.worker(t, f.db, f.sender(t, srv.URL()), fastOptions)
	ctx := t.Context()

	out := f.enqueue(t, "ada@example.com", time.Hour)
	if _, err := w.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	failed, err := outbox.List(ctx, "os:support", mail.Filter{Status: mail.StatusFailed})
	if err != nil || len(failed) != 1 || failed[0].ID != out.ID {
		t.Fatalf("failed listing = %+v, %v", failed, err)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	m, err := outbox.Retry(ctx, "os:support", "mailbox emptied", out.ID)
	if err != nil || m.Status != mail.StatusPending {
		t.Fatalf("Retry = %+v, %v", m, err)
	}
	if _, err := w.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitStatus(t, out.ID, mail.StatusSent, time.Second)
	if len(srv.Messages()) != 1 {
		t.Fatalf("%d delivered after retry", len(srv.Messages()))
	}
	entries, err := auditLog.List(ctx, audit.Filter{Actor: "os:support"})
	if err != nil {
		t.Fatal(err)
	}
	var retried bool
	for _, e := range entries {
		if e.Action == "mail.retry" && e.Target == out.ID.String() && e.Reason == "mailbox emptied" {
			retried = true
		}
	}
	if !retried {
		t.Fatalf("no audit entry for the retry in %+v", entries)
	}

	// A sent message is not retryable; neither is an unknown one, nor one
	// whose link expired.
	if _, err := outbox.Retry(ctx, "os:support", "", out.ID); platform.ErrorCode(err) != mail.CodeMailNotRetryable {
		t.Errorf("retry of a sent message: %v", err)
	}
	if _, err := outbox.Retry(ctx, "os:support", "", uuid.New()); platform.ErrorCode(err) != platform.CodeNotFound {
		t.Errorf("retry of an unknown message: %v", err)
	}
	mu.Lock()
	refuse = true
	mu.Unlock()
	short := f.enqueue(t, "bob@example.com", 300*time.Millisecond)
	if _, err := w.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitStatus(t, short.ID, mail.StatusFailed, time.Second)
	skew.Store(int64(350 * time.Millisecond))
	if _, err := outbox.Retry(ctx, "os:support", "", short.ID); platform.ErrorCode(err) != mail.CodeMailExpired {
		t.Errorf("retry of a message whose link expired: %v", err)
	}
	if _, err := outbox.List(ctx, "os:support", mail.Filter{Status: "bogus"}); platform.ErrorCode(err) != platform.CodeValidation {
		t.Errorf("listing by an unknown status: %v", err)
	}
}

// Finished messages leave the outbox after the retention period; live
// ones stay.
func TestPruneMail(t *testing.T) {
	f := newFixture(t)
	srv := mailtest.Start(t, mailtest.Options{})
	sent := f.enqueue(t, "ada@example.com", time.Hour)
	w := f.worker(t, f.db, f.sender(t, srv.URL()), fastOptions)
	if _, err := w.DeliverDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	pending := f.enqueue(t, "bob@example.com", time.Hour)
	ms := f.db.Mail()
	if n, err := f.db.Sweeps().FinishedMail(t.Context(), time.Now().Add(-time.Minute), false); err != nil || n != 0 {
		t.Fatalf("prune of nothing old: %d, %v", n, err)
	}
	if n, err := f.db.Sweeps().FinishedMail(t.Context(), time.Now().Add(time.Minute), false); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want the sent message only", n, err)
	}
	if _, _, err := ms.GetMail(t.Context(), sent.ID); platform.ErrorCode(err) != platform.CodeNotFound {
		t.Fatalf("pruned message still there: %v", err)
	}
	if attempts := storetest.Count(t, f.db, "SELECT count(*) FROM mail_attempts WHERE message_id = ?", sent.ID); attempts != 0 {
		t.Fatalf("%d attempts of the pruned message remain", attempts)
	}
	f.get(t, pending.ID)
}
