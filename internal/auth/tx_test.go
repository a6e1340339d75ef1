package auth_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

var errInjected = errors.New("injected failure")

// failingStore is the real session store whose transactions fail at one
// named step, after the steps before it have run on the database: what
// they wrote must roll back.
type failingStore struct {
	auth.Store
	step string
}

func (s failingStore) InTx(ctx context.Context, fn func(context.Context, auth.Tx) error) error {
	return s.Store.InTx(ctx, func(ctx context.Context, tx auth.Tx) error {
		return fn(ctx, failingTx{Tx: tx, step: s.step})
	})
}

type failingTx struct {
	auth.Tx
	step string
}

func (t failingTx) fail(step string) error {
	if t.step == step {
		return errInjected
	}
	return nil
}

func (t failingTx) InsertSession(ctx context.Context, s *auth.Session) error {
	if err := t.fail("InsertSession"); err != nil {
		return err
	}
	return t.Tx.InsertSession(ctx, s)
}

func (t failingTx) SetPasswordHash(ctx context.Context, userID uuid.UUID, hash string, at time.Time) error {
	if err := t.fail("SetPasswordHash"); err != nil {
		return err
	}
	return t.Tx.SetPasswordHash(ctx, userID, hash, at)
}

func (t failingTx) DeleteSessions(ctx context.Context, userID uuid.UUID, m auth.SessionMatch) (int, error) {
	if err := t.fail("DeleteSessions"); err != nil {
		return 0, err
	}
	return t.Tx.DeleteSessions(ctx, userID, m)
}

func (t failingTx) SupersedeProfileChanges(ctx context.Context, userID uuid.UUID, at time.Time) error {
	if err := t.fail("SupersedeProfileChanges"); err != nil {
		return err
	}
	return t.Tx.SupersedeProfileChanges(ctx, userID, at)
}

func (t failingTx) DeleteMailTokens(ctx context.Context, userID uuid.UUID, purpose string) error {
	if err := t.fail("DeleteMailTokens"); err != nil {
		return err
	}
	return t.Tx.DeleteMailTokens(ctx, userID, purpose)
}

func (t failingTx) EnqueueMail(ctx context.Context, m *mail.Outgoing) error {
	if err := t.fail("EnqueueMail"); err != nil {
		return err
	}
	return t.Tx.EnqueueMail(ctx, m)
}

func (t failingTx) InsertAudit(ctx context.Context, e *audit.Entry) error {
	if err := t.fail("InsertAudit"); err != nil {
		return err
	}
	return t.Tx.InsertAudit(ctx, e)
}

// count runs a SELECT count(*) and fails the test on error.
func (f *fixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	return storetest.Count(t, f.db, query, args...)
}

// mailToken stores a live token of purpose for u and returns it raw.
func (f *fixture) mailToken(t *testing.T, purpose string, u *account.User) string {
	t.Helper()
	token, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	err = f.db.InTx(t.Context(), func(ctx context.Context, tx store.Tx) error {
		return tx.InsertMailToken(ctx, &auth.MailToken{ID: uuid.New(), Purpose: purpose, Realm: u.Realm,
			UserID: u.ID, Email: u.Email, TokenHash: hash, ExpiresAt: now.Add(time.Hour), CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// A password reset consumes the token, sets the password, signs the user
// out everywhere, supersedes pending profile changes and enqueues the
// notice together: when any step fails, none of it happened.
func TestResetPasswordIsOneTransaction(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	if _, err := f.svc.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{}); err != nil {
		t.Fatal(err)
	}
	token := f.mailToken(t, auth.PurposeResetPassword, p.User)
	now := f.clock.Now()
	err := f.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.InsertChange(ctx, &profile.Change{ID: uuid.New(), UserID: p.User.ID, Type: profile.TypeProfile,
			Status: profile.StatusPending, Step: profile.StepConfirm, NewName: "Eve", BaseFingerprint: "fp",
			RequestedBy: "player", CreatedAt: now, UpdatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		u, err := f.db.Accounts().UserByID(ctx, p.User.ID)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("sessions=%d tokens=%d pending=%d outbox=%d newHash=%v",
			f.count(t, "SELECT count(*) FROM sessions WHERE user_id = ?", p.User.ID),
			f.count(t, "SELECT count(*) FROM auth_tokens WHERE user_id = ?", p.User.ID),
			f.count(t, "SELECT count(*) FROM profile_changes WHERE user_id = ? AND status = 'pending'", p.User.ID),
			f.count(t, "SELECT count(*) FROM mail_outbox WHERE template = ?", string(mail.TemplatePasswordChanged)),
			u.PasswordHash != p.User.PasswordHash)
	}
	const before = "sessions=2 tokens=1 pending=1 outbox=0 newHash=false"
	if got := state(); got != before {
		t.Fatalf("before the reset: %s, want %s", got, before)
	}
	for _, step := range []string{"SetPasswordHash", "DeleteSessions", "SupersedeProfileChanges", "DeleteMailTokens", "EnqueueMail"} {
		err := f.serviceOn(failingStore{Store: f.db.Sessions(), step: step}).
			ResetPassword(ctx, account.RealmPlayer, token, "a brand new password")
		if !errors.Is(err, errInjected) {
			t.Fatalf("reset with %s failing = %v, want the injected failure", step, err)
		}
		if got := state(); got != before {
			t.Errorf("after a reset whose %s failed: %s, want %s", step, got, before)
		}
	}
	wakes := f.mailer.wakes.Load()
	if err := f.svc.ResetPassword(ctx, account.RealmPlayer, token, "a brand new password"); err != nil {
		t.Fatal(err)
	}
	if got, want := state(), "sessions=0 tokens=0 pending=0 outbox=1 newHash=true"; got != want {
		t.Errorf("after the reset: %s, want %s", got, want)
	}
	if f.mailer.wakes.Load() != wakes+1 {
		t.Error("the reset did not wake the mail worker")
	}
	err = f.svc.ResetPassword(ctx, account.RealmPlayer, token, "yet another password")
	if platform.ErrorCode(err) != auth.CodeInvalidToken {
		t.Errorf("second use of the token = %v, want %s", err, auth.CodeInvalidToken)
	}
}

// A verification token works only for the address it was sent to, and
// only once; refusing a stale or expired one consumes nothing.
func TestVerifyEmailChecksAddressAndExpiry(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	token := f.mailToken(t, auth.PurposeVerifyEmail, p.User)
	setEmail := func(email string) {
		storetest.Exec(t, f.db, "UPDATE users SET email = ? WHERE id = ?", email, p.User.ID)
	}
	setEmail("ada@example.org")
	if _, err := f.svc.VerifyEmail(ctx, account.RealmPlayer, token); platform.ErrorCode(err) != auth.CodeInvalidToken {
		t.Fatalf("verify after the address changed = %v, want %s", err, auth.CodeInvalidToken)
	}
	if n := f.count(t, "SELECT count(*) FROM auth_tokens WHERE user_id = ?", p.User.ID); n != 1 {
		t.Fatalf("a refused verification left %d tokens, want the 1 it rolled back", n)
	}
	setEmail("ada@example.com")
	u, err := f.svc.VerifyEmail(ctx, account.RealmPlayer, token)
	if err != nil || !u.EmailVerified || u.ID != p.User.ID {
		t.Fatalf("verify = %+v, %v", u, err)
	}
	if _, err := f.svc.VerifyEmail(ctx, account.RealmPlayer, token); platform.ErrorCode(err) != auth.CodeInvalidToken {
		t.Fatalf("second verification = %v, want %s", err, auth.CodeInvalidToken)
	}

	expired := f.mailToken(t, auth.PurposeVerifyEmail, p.User)
	f.clock.Advance(time.Hour)
	if _, err := f.svc.VerifyEmail(ctx, account.RealmPlayer, expired); platform.ErrorCode(err) != auth.CodeInvalidToken {
		t.Fatalf("expired token = %v, want %s", err, auth.CodeInvalidToken)
	}
}

// A sign-up writes its user and first session together or not at all.
func TestSignUpRollsBackTheUserWhenTheSessionFails(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	_, err := f.serviceOn(failingStore{Store: f.db.Sessions(), step: "InsertSession"}).SignUp(ctx, account.RealmPlayer,
		account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada", Password: "correct horse"}, true, auth.Client{})
	if !errors.Is(err, errInjected) {
		t.Fatalf("sign-up = %v, want the injected failure", err)
	}
	if n := f.count(t, "SELECT count(*) FROM users"); n != 0 {
		t.Fatalf("a failed sign-up left %d users", n)
	}
}

// Support revocations commit with their audit entry; a named session that
// does not exist revokes and records nothing.
func TestSupportRevokeSessionsIsAudited(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	if _, err := f.svc.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{}); err != nil {
		t.Fatal(err)
	}
	sessions := func() int { return f.count(t, "SELECT count(*) FROM sessions WHERE user_id = ?", p.User.ID) }
	entries := func() int { return f.count(t, "SELECT count(*) FROM audit_log") }

	_, _, err := f.svc.SupportRevokeSessions(ctx, "os:ops", account.RealmPlayer, "ada@example.com", uuid.New(), "")
	if platform.ErrorCode(err) != auth.CodeSessionNotFound || sessions() != 2 || entries() != 0 {
		t.Fatalf("unknown session: %v, %d sessions, %d entries", err, sessions(), entries())
	}
	_, _, err = f.serviceOn(failingStore{Store: f.db.Sessions(), step: "InsertAudit"}).
		SupportRevokeSessions(ctx, "os:ops", account.RealmPlayer, "ada@example.com", uuid.Nil, "")
	if !errors.Is(err, errInjected) || sessions() != 2 {
		t.Fatalf("revocation whose audit failed: %v, %d sessions left, want 2", err, sessions())
	}
	_, n, err := f.svc.SupportRevokeSessions(ctx, "os:ops", account.RealmPlayer, "ada@example.com", uuid.Nil, "lost phone")
	if err != nil || n != 2 || sessions() != 0 {
		t.Fatalf("revoke all = %d, %v; %d sessions left", n, err, sessions())
	}
	list, err := f.db.Audit().ListAudit(ctx, audit.Filter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Action != auth.ActionSessionsRevoke || list[0].Details["revoked"] != "2" || list[0].Reason != "lost phone" {
		t.Fatalf("audit = %+v", list)
	}
}
