package mail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Store is what the worker needs from the outbox.
type Store interface {
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// ErrLeaseLost means another worker took the message over because this
// worker's lease ran out before it finished.
var ErrLeaseLost = errors.New("mail: lease lost to another worker")

// Claim is a message leased to one worker for one attempt.
type Claim struct {
	ID        uuid.UUID
	Template  Template
	To        string
	Payload   []byte
	Attempt   int
	Worker    string
	StartedAt time.Time
	ExpiresAt time.Time
}

// Result is how an attempt ended.
type Result struct {
	Outcome Outcome
	At      time.Time
	// NextAttemptAt is when a retried or interrupted message is due again.
	NextAttemptAt time.Time
	SMTPCode      int
	Error         string
}

// Sender delivers one rendered message.
type Sender interface {
	Send(ctx context.Context, m *Rendered) error
}

// DeliveryError is a failed delivery with what the server said. Permanent
// failures (an SMTP 5xx to the message, an address the server refuses) are
// not retried.
type DeliveryError struct {
	Code      int
	Permanent bool
	Err       error
}

// Error says whether the failure is permanent and what the server said.
func (e *DeliveryError) Error() string {
	kind := "temporary"
	if e.Permanent {
		kind = "permanent"
	}
	return fmt.Sprintf("%s delivery failure: %v", kind, e.Err)
}

// Unwrap returns the sender's error.
func (e *DeliveryError) Unwrap() error { return e.Err }

// WorkerOptions tune the delivery worker. Zero values take the defaults.
type WorkerOptions struct {
	// Concurrency is how many messages one worker sends at once (2).
	Concurrency int
	// PollInterval is how often an idle worker looks for due messages (2s);
	// Wake makes it look at once.
	PollInterval time.Duration
	// Lease is how long a claimed message belongs to its worker (2m). A
	// worker that dies mid-attempt delays the message by at most this.
	// It must comfortably exceed SendTimeout.
	Lease time.Duration
	// SendTimeout bounds one SMTP conversation (30s).
	SendTimeout time.Duration
	// BackoffBase and BackoffMax shape the retry delay: base·2^(attempt-1),
	// capped, with jitter (10s, 15m).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// OnAttempt, when set, is told the outcome of every delivery attempt
	// as it ends, so that metrics count attempts in the process that made
	// them instead of re-counting the outbox (which pruning shrinks).
	OnAttempt func(Outcome)
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 2
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 30 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 2 * time.Minute
	}
	if o.Lease < 2*o.SendTimeout {
		o.Lease = 2 * o.SendTimeout
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 10 * time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 15 * time.Minute
	}
	return o
}

// Worker delivers the outbox. Any number of workers, in one process or
// many, may run against one database: the store's claim hands each message
// to one of them at a time.
type Worker struct {
	id       string
	store    Store
	composer *Composer
	sender   Sender
	log      *slog.Logger
	now      func() time.Time
	opts     WorkerOptions
	wake     chan struct{}
}

// WorkerDeps are what a Worker works with.
type WorkerDeps struct {
	Store    Store
	Composer *Composer
	Sender   Sender
	Log      *slog.Logger
}

// NewWorker returns a worker with a process-unique id.
func NewWorker(d WorkerDeps, opts WorkerOptions, now func() time.Time) *Worker {
	host, _ := os.Hostname()
	raw := make([]byte, 4)
	rand.Read(raw)
	opts = opts.withDefaults()
	return &Worker{
		id:       fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(raw)),
		store:    d.Store,
		composer: d.Composer,
		sender:   d.Sender,
		log:      d.Log,
		now:      now,
		opts:     opts,
		wake:     make(chan struct{}, opts.Concurrency),
	}
}

// ID names the worker in leases and the attempt log.
func (w *Worker) ID() string { return w.id }

// Wake tells an idle worker that a message was just enqueued, so delivery
// does not wait for the next poll. It never blocks.
func (w *Worker) Wake() {
	for range w.opts.Concurrency {
		select {
		case w.wake <- struct{}{}:
		default:
			return
		}
	}
}

// Run delivers until ctx is cancelled. A message in flight when ctx ends
// is handed back (or, if the database is gone too, recovered by another
// worker once its lease lapses).
func (w *Worker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range w.opts.Concurrency {
		wg.Go(func() { w.loop(ctx) })
	}
	wg.Wait()
}

// loop delivers due messages. Giving up on overdue messages and deleting
// old ones are periodic jobs (see the jobs package), run once across
// replicas rather than by every worker.
func (w *Worker) loop(ctx context.Context) {
	idle := w.opts.PollInterval
	for ctx.Err() == nil {
		found, err := w.deliverOne(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			// The database is down or refusing: back off so a long outage
			// does not flood the log.
			w.log.WarnContext(ctx, "mail: claiming a message failed", "err", err, "retry_in", idle)
			w.sleep(ctx, idle)
			idle = min(idle*2, 30*time.Second)
			continue
		case found:
			idle = w.opts.PollInterval
			continue
		}
		idle = w.opts.PollInterval
		w.sleep(ctx, idle)
	}
}

func (w *Worker) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-w.wake:
	case <-t.C:
	}
}

// DeliverDue sends every message that is due now, one after another, and
// returns how many attempts it made. The CLI and tests use it; `serve`
// uses Run.
func (w *Worker) DeliverDue(ctx context.Context) (int, error) {
	if _, err := w.ExpireOverdue(ctx, w.now().UTC()); err != nil {
		return 0, err
	}
	n := 0
	for {
		found, err := w.deliverOne(ctx)
		if err != nil || !found {
			return n, err
		}
		n++
	}
}

func (w *Worker) deliverOne(ctx context.Context) (bool, error) {
	c, err := w.claim(ctx, w.now().UTC())
	if err != nil {
		return false, fmt.Errorf("claim mail: %w", err)
	}
	if c == nil {
		return false, nil
	}
	w.deliver(ctx, c)
	return true, nil
}

func (w *Worker) deliver(ctx context.Context, c *Claim) {
	log := w.log.With("message_id", c.ID, "template", c.Template, "attempt", c.Attempt)
	var res Result
	r, err := w.composer.Open(c.ID, c.Template, c.To, c.Payload)
	if err != nil {
		res = Result{Outcome: OutcomeFailed, Error: err.Error()}
	} else {
		sendCtx, cancel := context.WithTimeout(ctx, w.opts.SendTimeout)
		err = w.sender.Send(sendCtx, r)
		cancel()
		res = w.classify(ctx, c, err)
	}
	res.At = w.now().UTC()
	if w.opts.OnAttempt != nil {
		w.opts.OnAttempt(res.Outcome)
	}
	// Record the result even when ctx is cancelled: the stop is exactly
	// when handing the message back matters.
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ferr := w.finish(finishCtx, c, res)
	switch {
	case errors.Is(ferr, ErrLeaseLost):
		log.WarnContext(ctx, "mail: lease lapsed before the attempt finished; another worker owns the message", "outcome", res.Outcome)
	case ferr != nil:
		// The lease lapses and another worker retries; a message that was
		// in fact sent may then go out twice, with the same Message-ID.
		log.ErrorContext(ctx, "mail: recording the attempt failed", "outcome", res.Outcome, "err", ferr)
	case res.Outcome == OutcomeSent:
		log.InfoContext(ctx, "mail: sent")
	case res.Outcome == OutcomeRetry:
		log.WarnContext(ctx, "mail: delivery failed; will retry", "err", res.Error, "next_attempt_at", res.NextAttemptAt)
	case res.Outcome == OutcomeInterrupted:
		log.InfoContext(ctx, "mail: worker stopping; message handed back")
	default:
		log.ErrorContext(ctx, "mail: delivery failed permanently", "err", res.Error, "smtp_code", res.SMTPCode)
	}
}

func (w *Worker) classify(ctx context.Context, c *Claim, err error) Result {
	if err == nil {
		return Result{Outcome: OutcomeSent}
	}
	var de *DeliveryError
	code := 0
	if errors.As(err, &de) {
		code = de.Code
	}
	if ctx.Err() != nil {
		return Result{Outcome: OutcomeInterrupted, NextAttemptAt: w.now().UTC(), SMTPCode: code, Error: "worker stopped: " + err.Error()}
	}
	if de != nil && de.Permanent {
		return Result{Outcome: OutcomeFailed, SMTPCode: code, Error: err.Error()}
	}
	return Result{Outcome: OutcomeRetry, NextAttemptAt: w.now().UTC().Add(w.backoff(c.Attempt)), SMTPCode: code, Error: err.Error()}
}

// backoff is base·2^(attempt-1) capped at max, with "equal jitter": half
// fixed, half random, so retries of many messages after one outage spread
// out instead of arriving together.
func (w *Worker) backoff(attempt int) time.Duration {
	d := w.opts.BackoffBase
	for i := 1; i < attempt && d < w.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, w.opts.BackoffMax)
	half := d / 2
	return half + mathrand.N(half+1)
}
