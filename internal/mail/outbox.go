package mail

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Filter narrows an outbox listing.
type Filter struct {
	// Status, when set, keeps only messages in that status.
	Status Status
	// Limit caps the listing: 50 by default, at most 1000.
	Limit int
}

// OutboxStore is what support tooling needs from the outbox.
type OutboxStore interface {
	ListMail(ctx context.Context, f Filter) ([]Message, error)
	// GetMail returns the message and its attempts, oldest first, or a
	// NOT_FOUND error.
	GetMail(ctx context.Context, id uuid.UUID) (*Message, []Attempt, error)
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Tx is the transaction the worker's claims, results and expiries and a
// support retry run in. Each method is one step over the outbox; the
// rules that combine them are this package's.
type Tx interface {
	// ClaimDue leases the oldest due message to worker until until and
	// counts the attempt; nil when nothing is due. Due means pending and
	// past its retry time, or sending with a lapsed lease (its worker
	// died), and not yet expired at now. Concurrent claimers never get the
	// same message.
	ClaimDue(ctx context.Context, worker string, now, until time.Time) (*Claim, error)
	// AbandonAttempts ends the attempts of message id still marked as
	// sending with outcome abandoned and reason.
	AbandonAttempts(ctx context.Context, id uuid.UUID, at time.Time, reason string) error
	// InsertAttempt records the start of c's attempt.
	InsertAttempt(ctx context.Context, c *Claim) error
	// FinishAttempt records how c's attempt ended.
	FinishAttempt(ctx context.Context, c *Claim, r Result) error
	// SettleMail writes s to c's message if c's claim still holds, and
	// reports whether it did.
	SettleMail(ctx context.Context, c *Claim, s Settlement) (bool, error)
	// ExpireDue marks expired the live messages past their expiry at now
	// (a sending one only once its lease has lapsed), drops their
	// payloads and abandons their open attempts. It returns how many.
	ExpireDue(ctx context.Context, now time.Time) (int, error)
	// DropDeadPayloads drops the payloads of failed messages past their
	// expiry at now.
	DropDeadPayloads(ctx context.Context, now time.Time) error

	// RequeueFailed makes a message due at now if it is still failed, its
	// link unexpired at now and its payload kept, and reports whether it
	// was.
	RequeueFailed(ctx context.Context, id uuid.UUID, now time.Time) (bool, error)
	InsertAudit(ctx context.Context, e *audit.Entry) error
}

// Outbox is the support view of the outbox: list, inspect, retry. Every
// call is written to the audit log.
type Outbox struct {
	store OutboxStore
	audit *audit.Log
	now   func() time.Time
}

// NewOutbox returns the outbox service.
func NewOutbox(store OutboxStore, log *audit.Log, now func() time.Time) *Outbox {
	return &Outbox{store: store, audit: log, now: now}
}

// List returns messages newest first.
func (o *Outbox) List(ctx context.Context, actor string, f Filter) ([]Message, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, platform.Invalid("status", fmt.Sprintf("must be one of %v", Statuses))
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	if err := o.audit.Record(ctx, audit.Entry{Actor: actor, Action: "mail.outbox.list",
		Details: map[string]string{"status": string(f.Status)}}); err != nil {
		return nil, err
	}
	msgs, err := o.store.ListMail(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	return msgs, nil
}

// Get returns one message with its delivery attempts.
func (o *Outbox) Get(ctx context.Context, actor string, id uuid.UUID) (*Message, []Attempt, error) {
	if err := o.audit.Record(ctx, audit.Entry{Actor: actor, Action: "mail.show", Target: id.String()}); err != nil {
		return nil, nil, err
	}
	return o.store.GetMail(ctx, id)
}

// Retry sends a failed message again, if its link is still valid. Sent
// messages cannot be retried (their payload is gone, and the recipient
// has them); expired ones would only deliver a dead link.
func (o *Outbox) Retry(ctx context.Context, actor, reason string, id uuid.UUID) (*Message, error) {
	m, _, err := o.store.GetMail(ctx, id)
	if err != nil {
		return nil, err
	}
	now := o.now().UTC()
	switch {
	case m.Status == StatusExpired || (m.Status == StatusFailed && !m.ExpiresAt.After(now)):
		return nil, platform.Errorf(platform.KindUnprocessable, CodeMailExpired,
			"message %s expired at %s; its link no longer works, so issue a new one instead", id, m.ExpiresAt.Format(time.RFC3339))
	case m.Status != StatusFailed:
		return nil, platform.Errorf(platform.KindConflict, CodeMailNotRetryable,
			"message %s is %s; only failed messages can be retried", id, m.Status)
	}
	entry := &audit.Entry{At: now, Actor: actor, Action: "mail.retry", Target: id.String(), Reason: reason,
		Details: map[string]string{"template": string(m.Template), "previousError": m.LastError}}
	ok := false
	err = o.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if ok, err = tx.RequeueFailed(ctx, id, now); err != nil || !ok {
			return err
		}
		return tx.InsertAudit(ctx, entry)
	})
	if err != nil {
		return nil, fmt.Errorf("retry mail: %w", err)
	}
	if !ok {
		return nil, platform.Errorf(platform.KindConflict, CodeMailNotRetryable, "message %s changed meanwhile; look again", id)
	}
	m, _, err = o.store.GetMail(ctx, id)
	return m, err
}
