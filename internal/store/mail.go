package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
)

type mailRow struct {
	bun.BaseModel `bun:"table:mail_outbox"`

	ID            uuid.UUID  `bun:"id,pk"`
	Template      string     `bun:"template"`
	Recipient     string     `bun:"recipient"`
	Subject       string     `bun:"subject"`
	Payload       []byte     `bun:"payload"`
	Status        string     `bun:"status"`
	Attempts      int        `bun:"attempts"`
	NextAttemptAt time.Time  `bun:"next_attempt_at"`
	LeaseOwner    *string    `bun:"lease_owner"`
	LeaseUntil    *time.Time `bun:"lease_until"`
	ExpiresAt     time.Time  `bun:"expires_at"`
	LastError     string     `bun:"last_error"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
	SentAt        *time.Time `bun:"sent_at"`
}

func (r *mailRow) message() mail.Message {
	m := mail.Message{
		ID:            r.ID,
		Template:      mail.Template(r.Template),
		To:            r.Recipient,
		Subject:       r.Subject,
		Status:        mail.Status(r.Status),
		Attempts:      r.Attempts,
		NextAttemptAt: r.NextAttemptAt.UTC(),
		LastError:     r.LastError,
		CreatedAt:     r.CreatedAt.UTC(),
		UpdatedAt:     r.UpdatedAt.UTC(),
		ExpiresAt:     r.ExpiresAt.UTC(),
	}
	if r.LeaseOwner != nil {
		m.LeaseOwner = *r.LeaseOwner
	}
	if r.SentAt != nil {
		t := r.SentAt.UTC()
		m.SentAt = &t
	}
	return m
}

type mailAttemptRow struct {
	bun.BaseModel `bun:"table:mail_attempts"`

	ID         int64      `bun:"id,pk,autoincrement"`
	MessageID  uuid.UUID  `bun:"message_id"`
	Attempt    int        `bun:"attempt"`
	Worker     string     `bun:"worker"`
	StartedAt  time.Time  `bun:"started_at"`
	FinishedAt *time.Time `bun:"finished_at"`
	Outcome    string     `bun:"outcome"`
	SMTPCode   int        `bun:"smtp_code"`
	Error      string     `bun:"error"`
}

// MailStore implements mail.Store and mail.OutboxStore; the worker's and
// the support retry's steps are those of Tx.
type MailStore struct{ db *DB }

// Mail returns the outbox store.
func (db *DB) Mail() *MailStore { return &MailStore{db: db} }

// enqueueMailTx writes m to the outbox on idb. Run as a step of a
// transaction (Tx.EnqueueMail), the message exists if and only if the
// change that caused it commits.
func enqueueMailTx(ctx context.Context, idb bun.IDB, m *mail.Outgoing) error {
	row := &mailRow{
		ID:            m.ID,
		Template:      string(m.Template),
		Recipient:     m.To,
		Subject:       m.Subject,
		Payload:       m.Payload,
		Status:        string(mail.StatusPending),
		NextAttemptAt: m.CreatedAt.UTC(),
		ExpiresAt:     m.ExpiresAt.UTC(),
		CreatedAt:     m.CreatedAt.UTC(),
		UpdatedAt:     m.CreatedAt.UTC(),
	}
	if _, err := idb.NewInsert().Model(row).Exec(ctx); err != nil {
		return mapError(fmt.Errorf("enqueue mail: %w", err))
	}
	return nil
}

// EnqueueMail writes m to the outbox on its own, for messages that go with
// no other change.
func (s *MailStore) EnqueueMail(ctx context.Context, m *mail.Outgoing) error {
	return enqueueMailTx(ctx, s.db.bun, m)
}

// ClaimDue implements mail.Tx. Every worker runs it on every poll, so its
// values are sent as parameters (rawQ.each): on PostgreSQL one prepared
// statement serves every claim.
func (t Tx) ClaimDue(ctx context.Context, worker string, now, until time.Time) (*mail.Claim, error) {
	query, args := claimDueSQL(t.postgres(), worker, now.UTC(), until.UTC())
	var c *mail.Claim
	err := t.each(ctx, func(row rowScanner) error {
		c = &mail.Claim{}
		var template string
		err := row.Scan(dbUUID{&c.ID}, &template, &c.To, &c.Payload, &c.Attempt, dbTime{&c.ExpiresAt})
		c.Template = mail.Template(template)
		return err
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// claimDueSQL leases the oldest due message, found through
// mail_outbox_due_idx in due order. On PostgreSQL the due row is locked
// with FOR UPDATE SKIP LOCKED, so concurrent workers each take a different
// row without waiting; on SQLite the immediate transaction serialises
// claimers, and INDEXED BY keeps its statistics-free planner off
// mail_outbox_status_idx, through which it would read and sort every
// pending message.
func claimDueSQL(postgres bool, worker string, now, until time.Time) (string, []any) {
	index, lock := "INDEXED BY mail_outbox_due_idx", ""
	if postgres {
		index, lock = "", "FOR UPDATE SKIP LOCKED"
	}
	return `UPDATE mail_outbox
		SET status = 'sending', attempts = attempts + 1, lease_owner = ?, lease_until = ?,
		    next_attempt_at = ?, updated_at = ?
		WHERE id = (
			SELECT id FROM mail_outbox ` + index + `
			WHERE status IN ('pending', 'sending') AND next_attempt_at <= ? AND expires_at > ?
			ORDER BY next_attempt_at
			LIMIT 1 ` + lock + `)
		-- Checked again on the row as it is after any concurrent claim.
		AND status IN ('pending', 'sending') AND next_attempt_at <= ?
		RETURNING id, template, recipient, payload, attempts, expires_at`,
		[]any{worker, until, until, now, now, now, now}
}

// AbandonAttempts implements mail.Tx.
func (t Tx) AbandonAttempts(ctx context.Context, id uuid.UUID, at time.Time, reason string) error {
	_, err := t.exec(ctx, `UPDATE mail_attempts SET outcome = ?, finished_at = ?, error = ?
		WHERE message_id = ? AND outcome = ?`,
		mail.OutcomeAbandoned, at.UTC(), reason, id, mail.OutcomeSending)
	return err
}

// InsertAttempt implements mail.Tx.
func (t Tx) InsertAttempt(ctx context.Context, c *mail.Claim) error {
	row := &mailAttemptRow{MessageID: c.ID, Attempt: c.Attempt, Worker: c.Worker, StartedAt: c.StartedAt.UTC(),
		Outcome: string(mail.OutcomeSending)}
	_, err := t.idb.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// FinishAttempt implements mail.Tx.
func (t Tx) FinishAttempt(ctx context.Context, c *mail.Claim, r mail.Result) error {
	_, err := t.exec(ctx, `UPDATE mail_attempts SET outcome = ?, finished_at = ?, smtp_code = ?, error = ?
		WHERE message_id = ? AND attempt = ?`,
		r.Outcome, r.At.UTC(), r.SMTPCode, truncate(r.Error, 2000), c.ID, c.Attempt)
	return err
}

// SettleMail implements mail.Tx.
func (t Tx) SettleMail(ctx context.Context, c *mail.Claim, s mail.Settlement) (bool, error) {
	payload := "payload"
	if s.DropPayload {
		payload = "NULL"
	}
	res, err := t.exec(ctx, `UPDATE mail_outbox
		SET status = ?, next_attempt_at = ?, lease_owner = NULL, lease_until = NULL,
		    last_error = ?, updated_at = ?, sent_at = ?, payload = `+payload+`
		WHERE id = ? AND status = 'sending' AND lease_owner = ? AND attempts = ?`,
		s.Status, s.NextAttemptAt, truncate(s.Error, 2000), s.At, s.SentAt, c.ID, c.Worker, c.Attempt)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ExpireDue implements mail.Tx.
func (t Tx) ExpireDue(ctx context.Context, now time.Time) (int, error) {
	now = now.UTC()
	// Live messages past their link's expiry; a sending one only once its
	// lease has lapsed, so a worker mid-attempt is not overtaken.
	const due = `expires_at <= ? AND (status = 'pending' OR (status = 'sending' AND next_attempt_at <= ?))`
	if _, err := t.idb.NewRaw(`UPDATE mail_attempts SET outcome = ?, finished_at = ?, error = ?
		WHERE outcome = ? AND message_id IN (SELECT id FROM mail_outbox WHERE `+due+`)`,
		mail.OutcomeAbandoned, now, "lease lapsed; message expired", mail.OutcomeSending, now, now).Exec(ctx); err != nil {
		return 0, mapError(err)
	}
	res, err := t.idb.NewRaw(`UPDATE mail_outbox
		SET status = 'expired', payload = NULL, lease_owner = NULL, lease_until = NULL, updated_at = ?,
		    last_error = CASE WHEN last_error = '' THEN 'the link expired before the message could be delivered' ELSE last_error END
		WHERE `+due, now, now, now).Exec(ctx)
	if err != nil {
		return 0, mapError(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// DropDeadPayloads implements mail.Tx.
func (t Tx) DropDeadPayloads(ctx context.Context, now time.Time) error {
	_, err := t.idb.NewRaw(`UPDATE mail_outbox SET payload = NULL
		WHERE status = 'failed' AND expires_at <= ? AND payload IS NOT NULL`, now.UTC()).Exec(ctx)
	return mapError(err)
}

// ListMail implements mail.OutboxStore.
func (s *MailStore) ListMail(ctx context.Context, f mail.Filter) ([]mail.Message, error) {
	var rows []mailRow
	q := s.db.bun.NewSelect().Model(&rows).ExcludeColumn("payload").
		OrderExpr("created_at DESC, id DESC").Limit(int64(f.Limit))
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, mapError(err)
	}
	out := make([]mail.Message, len(rows))
	for i := range rows {
		out[i] = rows[i].message()
	}
	return out, nil
}

// GetMail implements mail.OutboxStore.
func (s *MailStore) GetMail(ctx context.Context, id uuid.UUID) (*mail.Message, []mail.Attempt, error) {
	var row mailRow
	err := s.db.bun.NewSelect().Model(&row).ExcludeColumn("payload").Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, platform.Errorf(platform.KindNotFound, platform.CodeNotFound, "no message %s in the outbox", id)
	}
	if err != nil {
		return nil, nil, mapError(err)
	}
	var atts []mailAttemptRow
	if err := s.db.bun.NewSelect().Model(&atts).Where("message_id = ?", id).Order("attempt").Scan(ctx); err != nil {
		return nil, nil, mapError(err)
	}
	m := row.message()
	out := make([]mail.Attempt, len(atts))
	for i, a := range atts {
		out[i] = mail.Attempt{Attempt: a.Attempt, Worker: a.Worker, StartedAt: a.StartedAt.UTC(),
			Outcome: mail.Outcome(a.Outcome), SMTPCode: a.SMTPCode, Error: a.Error}
		if a.FinishedAt != nil {
			t := a.FinishedAt.UTC()
			out[i].FinishedAt = &t
		}
	}
	return &m, out, nil
}

// InTx implements mail.Store and mail.OutboxStore with DB.InTx, so fn may run more than once.
func (s *MailStore) InTx(ctx context.Context, fn func(ctx context.Context, tx mail.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// RequeueFailed implements mail.Tx. The conditions are checked again on
// the row as it is now, so a message that changed since the caller looked
// is left alone.
func (t Tx) RequeueFailed(ctx context.Context, id uuid.UUID, now time.Time) (bool, error) {
	now = now.UTC()
	res, err := t.idb.NewRaw(`UPDATE mail_outbox SET status = 'pending', next_attempt_at = ?, updated_at = ?
		WHERE id = ? AND status = 'failed' AND expires_at > ? AND payload IS NOT NULL`,
		now, now, id, now).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// EnqueueMail implements the enqueue-mail step of every service's Tx.
func (t Tx) EnqueueMail(ctx context.Context, m *mail.Outgoing) error {
	return enqueueMailTx(ctx, t.idb, m)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the column stays valid UTF-8.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
