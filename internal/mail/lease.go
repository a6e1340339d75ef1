package mail

import (
	"context"
	"fmt"
	"time"
)

// Settlement is what an attempt's result makes of its message.
type Settlement struct {
	Status        Status
	NextAttemptAt time.Time
	At            time.Time
	// SentAt is set for a sent message.
	SentAt *time.Time
	// DropPayload forgets the body: the recipient has it now.
	DropPayload bool
	Error       string
}

// settle is the rule for a finished attempt: a sent or failed message is
// done (a sent one keeps no payload), a retried or interrupted one is
// pending again at its NextAttemptAt.
func settle(r Result) (Settlement, error) {
	s := Settlement{Status: StatusPending, NextAttemptAt: r.NextAttemptAt.UTC(), At: r.At.UTC(), Error: r.Error}
	switch r.Outcome {
	case OutcomeSent:
		s.Status, s.NextAttemptAt, s.SentAt, s.DropPayload = StatusSent, s.At, &s.At, true
	case OutcomeFailed:
		s.Status, s.NextAttemptAt = StatusFailed, s.At
	case OutcomeRetry, OutcomeInterrupted:
	default:
		return s, fmt.Errorf("unexpected outcome %q", r.Outcome)
	}
	return s, nil
}

// claim leases one due message to this worker for Lease and records the
// start of the attempt, in one transaction; nil when nothing is due. The
// claim moves the message's next attempt to the end of the lease, so it is
// not due again until the lease lapses.
func (w *Worker) claim(ctx context.Context, now time.Time) (*Claim, error) {
	var claim *Claim
	err := w.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		c, err := tx.ClaimDue(ctx, w.id, now, now.Add(w.opts.Lease))
		if err != nil || c == nil {
			return err
		}
		c.Worker, c.StartedAt = w.id, now
		// An attempt still marked as sending belongs to a worker whose
		// lease lapsed: it died or hung. Say so in the attempt log.
		if err := tx.AbandonAttempts(ctx, c.ID, now, "lease lapsed; another worker took over"); err != nil {
			return err
		}
		if err := tx.InsertAttempt(ctx, c); err != nil {
			return err
		}
		claim = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claim, nil
}

// finish records the result of a claimed attempt. The attempt log always
// gets the true outcome; the message only changes while this claim still
// holds it, and otherwise finish returns ErrLeaseLost.
func (w *Worker) finish(ctx context.Context, c *Claim, r Result) error {
	s, err := settle(r)
	if err != nil {
		return fmt.Errorf("finish mail: %w", err)
	}
	held := false
	err = w.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.FinishAttempt(ctx, c, r); err != nil {
			return err
		}
		var err error
		held, err = tx.SettleMail(ctx, c, s)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish mail: %w", err)
	}
	if !held {
		return ErrLeaseLost
	}
	return nil
}

// expire marks the messages whose link expired before delivery, and drops
// the payloads of failed messages that can no longer be retried, in one
// transaction. It returns how many messages it expired.
func (w *Worker) expire(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := w.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if n, err = tx.ExpireDue(ctx, now); err != nil {
			return err
		}
		// A failed message can be retried only while its link works; after
		// that its payload is dead weight and a liability.
		return tx.DropDeadPayloads(ctx, now)
	})
	if err != nil {
		return 0, fmt.Errorf("expire mail: %w", err)
	}
	return n, nil
}
