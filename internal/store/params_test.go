package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// The mail worker's statements run on every poll and every delivery, so
// on PostgreSQL they must reach the server as one prepared statement each,
// with their values as parameters, even inside the worker's transaction.
// With the values written into the text instead, two claims at different
// times would be two statements (or none, sent by the simple protocol),
// so this fails if they are ever inlined again. It reads the session's
// prepared statements, which pgx's default statement cache fills.
func TestMailWorkerStatementsSendParameters(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	if db.Dialect() != store.Postgres {
		t.Skip("SQLite has no prepared-statement cache to read; PostgreSQL only")
	}
	db.SQL().SetMaxOpenConns(1) // one session: the one whose statements are read below
	base := time.Now().UTC().Truncate(time.Millisecond)
	for i := range 2 {
		m := &mail.Outgoing{ID: uuid.New(), Template: mail.TemplateVerifyEmail, To: fmt.Sprintf("p%d@example.com", i),
			Subject: "Verify", Payload: []byte("sealed"), CreatedAt: base.Add(time.Duration(i) * time.Second), ExpiresAt: base.Add(time.Hour)}
		if err := db.Mail().EnqueueMail(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		deliverOne(t, db, fmt.Sprintf("worker-%d", i), base.Add(time.Duration(i+1)*time.Minute))
	}

	prepared := preparedStatements(t, db)
	for _, want := range []struct {
		name, fragment string
		params         int
	}{
		{"claim", "SET status = 'sending'", 7},
		{"abandon", "UPDATE mail_attempts SET outcome = $1, finished_at = $2, error = $3\n", 5},
		{"finish", "smtp_code = $3", 6},
		{"settle", "lease_owner = NULL, lease_until = NULL,\n\t\t    last_error", 8},
	} {
		var found []string
		for text, params := range prepared {
			if strings.Contains(text, want.fragment) {
				found = append(found, text)
				if params != want.params {
					t.Errorf("%s prepared with %d parameters, want %d:\n%s", want.name, params, want.params, text)
				}
			}
		}
		if len(found) != 1 {
			t.Errorf("%s: %d prepared statements after two deliveries, want exactly 1: %q", want.name, len(found), found)
		}
	}
}

// deliverOne runs the worker's steps for one message, as mail.Worker does.
func deliverOne(t *testing.T, db *store.DB, worker string, now time.Time) {
	t.Helper()
	err := db.InTx(t.Context(), func(ctx context.Context, tx store.Tx) error {
		c, err := tx.ClaimDue(ctx, worker, now, now.Add(time.Minute))
		if err != nil || c == nil {
			return fmt.Errorf("claim at %v: %+v, %w", now, c, err)
		}
		c.Worker, c.StartedAt = worker, now
		if err := tx.AbandonAttempts(ctx, c.ID, now, "lease lapsed"); err != nil {
			return err
		}
		if err := tx.InsertAttempt(ctx, c); err != nil {
			return err
		}
		if err := tx.FinishAttempt(ctx, c, mail.Result{Outcome: mail.OutcomeSent, At: now, SMTPCode: 250}); err != nil {
			return err
		}
		ok, err := tx.SettleMail(ctx, c, mail.Settlement{Status: mail.StatusSent, NextAttemptAt: now, At: now, SentAt: &now, DropPayload: true})
		if err == nil && !ok {
			err = fmt.Errorf("settle: the claim of %v no longer held", c.ID)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// preparedStatements returns the statements prepared on the pool's one
// session, with how many parameters each takes.
func preparedStatements(t *testing.T, db *store.DB) map[string]int {
	t.Helper()
	rows, err := db.SQL().QueryContext(t.Context(), "SELECT statement, cardinality(parameter_types) FROM pg_prepared_statements")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var text string
		var n int
		if err := rows.Scan(&text, &n); err != nil {
			t.Fatal(err)
		}
		out[text] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
