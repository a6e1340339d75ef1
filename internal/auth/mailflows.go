package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Purposes of mailed tokens.
const (
	PurposeVerifyEmail   = "verify-email"
	PurposeResetPassword = "reset-password"
)

// Error codes of the mailed-token flows (better-auth's).
const (
	CodeInvalidToken         = "INVALID_TOKEN"
	CodeEmailMismatch        = "EMAIL_MISMATCH"
	CodeEmailAlreadyVerified = "EMAIL_ALREADY_VERIFIED"
)

// ErrTokenNotFound is what a Store returns for an unknown, used or expired
// mailed token.
var ErrTokenNotFound = errors.New("token not found")

// MailToken is a single-use token sent by mail. Only its hash is stored.
type MailToken struct {
	ID        uuid.UUID
	Purpose   string
	Realm     account.Realm
	UserID    uuid.UUID
	Email     string
	TokenHash TokenHash
	ExpiresAt time.Time
	CreatedAt time.Time
}

// MountPath is where a realm's authentication handler is mounted; mailed
// links point back to it.
func MountPath(realm account.Realm) string {
	if realm == account.RealmAdmin {
		return "/api/auth/admin"
	}
	return "/api/auth/player"
}

// resetPasswordFallback is where a reset link sends the browser when the
// request named no redirectTo: the site's root, with ?token=.
const resetPasswordFallback = "/"

// SendVerificationEmail mails a verification link. With a signed-in caller
// (p not nil) the email must be the caller's own and not yet verified.
// Anonymous requests always succeed after the same minimum time, so they
// do not reveal whether an account exists or is verified.
func (s *Service) SendVerificationEmail(ctx context.Context, realm account.Realm, p *Principal, email, callbackURL string, client Client) error {
	start := time.Now()
	email = account.NormalizeEmail(email)
	if !account.ValidEmail(email) {
		return platform.Invalid("email", "Invalid email address")
	}
	if err := s.origins.CheckCallback(callbackURL, CodeInvalidCallbackURL); err != nil {
		return err
	}
	if _, err := s.allow(ctx, actionVerifyMail, realm, client, email, s.opts.Limits.MailIP, s.opts.Limits.MailAccount); err != nil {
		return err
	}
	if p != nil {
		if p.User.Email != email {
			return platform.Errorf(platform.KindInvalid, CodeEmailMismatch, "Email mismatch")
		}
		if p.User.EmailVerified {
			return platform.Errorf(platform.KindInvalid, CodeEmailAlreadyVerified, "Email is already verified")
		}
		return s.mailVerification(ctx, p.User, callbackURL)
	}
	err := s.sendVerificationTo(ctx, realm, email, callbackURL)
	s.waitFloor(ctx, start)
	return err
}

func (s *Service) sendVerificationTo(ctx context.Context, realm account.Realm, email, callbackURL string) error {
	u, err := s.accounts.ByEmail(ctx, realm, email)
	if errors.Is(err, account.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if u.EmailVerified {
		return nil
	}
	return s.mailVerification(ctx, u, callbackURL)
}

func (s *Service) mailVerification(ctx context.Context, u *account.User, callbackURL string) error {
	token, t, err := s.newMailToken(PurposeVerifyEmail, u)
	if err != nil {
		return err
	}
	q := url.Values{"token": {token}}
	if callbackURL != "" {
		q.Set("callbackURL", callbackURL)
	}
	link := s.opts.BaseURL + MountPath(u.Realm) + "/verify-email?" + q.Encode()
	msg, err := s.mailer.Compose(mail.TemplateVerifyEmail, u.Email,
		mail.Data{Name: mail.GreetingName(u.Name, u.EmailVerified), Email: u.Email, Link: link, ExpiresAt: t.ExpiresAt}, t.ExpiresAt)
	if err != nil {
		return fmt.Errorf("compose verification mail: %w", err)
	}
	if err := s.issueMailToken(ctx, t, msg); err != nil {
		return fmt.Errorf("send verification mail: %w", err)
	}
	return nil
}

// issueMailToken stores t in place of the user's earlier tokens of its
// purpose, so that only the newest mail's link works, and enqueues m with
// it: the token exists if and only if its mail will go out.
func (s *Service) issueMailToken(ctx context.Context, t *MailToken, m *mail.Outgoing) error {
	err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.DeleteMailTokens(ctx, t.UserID, t.Purpose); err != nil {
			return err
		}
		if err := tx.InsertMailToken(ctx, t); err != nil {
			return err
		}
		return tx.EnqueueMail(ctx, m)
	})
	if err != nil {
		return err
	}
	s.mailer.Wake()
	return nil
}

// takeMailToken consumes the token of purpose and realm with tokenHash
// inside tx: ErrTokenNotFound when it is unknown, used or expired at now.
func takeMailToken(ctx context.Context, tx Tx, purpose string, realm account.Realm, tokenHash TokenHash, now time.Time) (*MailToken, error) {
	t, err := tx.TakeMailToken(ctx, purpose, realm, tokenHash)
	if err != nil {
		return nil, err
	}
	if !t.ExpiresAt.After(now) {
		return nil, ErrTokenNotFound // the rollback leaves it for the pruner
	}
	return t, nil
}

// VerifyEmail consumes a verification token and marks the email verified.
// Unknown, used, expired and stale tokens (the account's email changed
// since) are all 401 INVALID_TOKEN, as better-auth answers.
func (s *Service) VerifyEmail(ctx context.Context, realm account.Realm, token string) (*account.User, error) {
	if token == "" || len(token) > 256 {
		return nil, errInvalidVerifyToken
	}
	now := s.clock()
	var u *account.User
	err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		t, err := takeMailToken(ctx, tx, PurposeVerifyEmail, realm, HashToken(token), now)
		if err != nil {
			return err
		}
		ok, err := tx.MarkEmailVerified(ctx, t.UserID, t.Email, now)
		if err != nil {
			return err
		}
		if !ok {
			return ErrTokenNotFound // the address changed since the mail went out
		}
		u, err = tx.UserByID(ctx, t.UserID)
		return err
	})
	if errors.Is(err, ErrTokenNotFound) {
		return nil, errInvalidVerifyToken
	}
	if err != nil {
		return nil, fmt.Errorf("verify email: %w", err)
	}
	s.UserSessionsChanged(ctx, u.ID, ChangedEmailVerified)
	return u, nil
}

var errInvalidVerifyToken = platform.Errorf(platform.KindUnauthenticated, CodeInvalidToken, "Invalid token")

// RequestPasswordReset mails a reset link if realm has an account with
// email. The answer and its timing are the same either way.
func (s *Service) RequestPasswordReset(ctx context.Context, realm account.Realm, email, redirectTo string, client Client) error {
	start := time.Now()
	email = account.NormalizeEmail(email)
	if !account.ValidEmail(email) {
		return platform.Invalid("email", "Invalid email address")
	}
	if err := s.origins.CheckCallback(redirectTo, CodeInvalidRedirectURL); err != nil {
		return err
	}
	if _, err := s.allow(ctx, actionResetRequest, realm, client, email, s.opts.Limits.MailIP, s.opts.Limits.MailAccount); err != nil {
		return err
	}
	err := s.mailReset(ctx, realm, email, redirectTo)
	s.waitFloor(ctx, start)
	return err
}

func (s *Service) mailReset(ctx context.Context, realm account.Realm, email, redirectTo string) error {
	u, err := s.accounts.ByEmail(ctx, realm, email)
	if errors.Is(err, account.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	token, t, err := s.newMailToken(PurposeResetPassword, u)
	if err != nil {
		return err
	}
	if redirectTo == "" {
		redirectTo = resetPasswordFallback
	}
	link := s.opts.BaseURL + MountPath(realm) + "/reset-password/" + token + "?" + url.Values{"callbackURL": {redirectTo}}.Encode()
	msg, err := s.mailer.Compose(mail.TemplateResetPassword, u.Email,
		mail.Data{Name: mail.GreetingName(u.Name, u.EmailVerified), Email: u.Email, Link: link, ExpiresAt: t.ExpiresAt}, t.ExpiresAt)
	if err != nil {
		return fmt.Errorf("compose reset mail: %w", err)
	}
	if err := s.issueMailToken(ctx, t, msg); err != nil {
		return fmt.Errorf("request password reset: %w", err)
	}
	return nil
}

var errInvalidResetToken = platform.Errorf(platform.KindInvalid, CodeInvalidToken, "Invalid token")

// CheckResetToken reports whether a reset token is live, without using it:
// the mailed link only opens the page where the user picks a password.
func (s *Service) CheckResetToken(ctx context.Context, realm account.Realm, token string) error {
	if token == "" || len(token) > 256 {
		return errInvalidResetToken
	}
	_, err := s.store.PeekMailToken(ctx, PurposeResetPassword, realm, HashToken(token), s.clock())
	if errors.Is(err, ErrTokenNotFound) {
		return errInvalidResetToken
	}
	return err
}

// ResetPassword sets a new password with a mailed token, signs the user
// out everywhere and tells them by mail, all in one transaction.
func (s *Service) ResetPassword(ctx context.Context, realm account.Realm, token, newPassword string) error {
	if err := account.CheckPassword(newPassword); err != nil {
		if pe, ok := platform.As(err); ok && pe.Code == platform.CodeValidation {
			return platform.Invalid("newPassword", "is required")
		}
		return err
	}
	if token == "" || len(token) > 256 {
		return errInvalidResetToken
	}
	hash := HashToken(token)
	now := s.clock()
	t, err := s.store.PeekMailToken(ctx, PurposeResetPassword, realm, hash, now)
	if errors.Is(err, ErrTokenNotFound) {
		return errInvalidResetToken
	}
	if err != nil {
		return fmt.Errorf("reset password: %w", err)
	}
	u, err := s.accounts.ByID(ctx, t.UserID)
	if err != nil {
		return fmt.Errorf("reset password: %w", err)
	}
	passwordHash, err := s.accounts.HashPassword(ctx, newPassword)
	if err != nil {
		return err
	}
	notice, err := s.mailer.Compose(mail.TemplatePasswordChanged, u.Email,
		mail.Data{Name: mail.GreetingName(u.Name, u.EmailVerified), Email: u.Email, Nickname: u.Nickname}, now.Add(s.opts.TokenTTL))
	if err != nil {
		return fmt.Errorf("compose password-changed mail: %w", err)
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		return resetPassword(ctx, tx, realm, hash, passwordHash, s.clock(), notice)
	})
	if errors.Is(err, ErrTokenNotFound) { // used by a concurrent request meanwhile
		return errInvalidResetToken
	}
	if err != nil {
		return fmt.Errorf("reset password: %w", err)
	}
	s.ended(ctx, t.UserID, EndedPasswordChanged)
	s.mailer.Wake()
	return nil
}

// resetPassword consumes a reset token and sets the new password hash. It
// signs the user out everywhere, supersedes the user's pending profile
// changes (queued, perhaps, by whoever the reset locks out), kills the
// user's other reset links and enqueues notice, all in tx.
func resetPassword(ctx context.Context, tx Tx, realm account.Realm, tokenHash TokenHash, passwordHash string, now time.Time, notice *mail.Outgoing) error {
	t, err := takeMailToken(ctx, tx, PurposeResetPassword, realm, tokenHash, now)
	if err != nil {
		return err
	}
	if err := tx.SetPasswordHash(ctx, t.UserID, passwordHash, now); err != nil {
		return err
	}
	if _, err := tx.DeleteSessions(ctx, t.UserID, SessionMatch{}); err != nil {
		return err
	}
	if err := tx.SupersedeProfileChanges(ctx, t.UserID, now); err != nil {
		return err
	}
	if err := tx.DeleteMailTokens(ctx, t.UserID, PurposeResetPassword); err != nil {
		return err
	}
	return tx.EnqueueMail(ctx, notice)
}

func (s *Service) newMailToken(purpose string, u *account.User) (string, *MailToken, error) {
	token, hash, err := NewToken()
	if err != nil {
		return "", nil, err
	}
	now := s.clock()
	return token, &MailToken{
		ID: uuid.New(), Purpose: purpose, Realm: u.Realm, UserID: u.ID, Email: u.Email,
		TokenHash: hash, ExpiresAt: now.Add(s.opts.TokenTTL), CreatedAt: now,
	}, nil
}

// waitFloor sleeps until AnonymousMailFloor has passed since start.
func (s *Service) waitFloor(ctx context.Context, start time.Time) {
	wait := s.opts.AnonymousMailFloor - time.Since(start)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
