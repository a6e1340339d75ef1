package profile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// ProfileChangeInput is the body of request-profile-change.
type ProfileChangeInput struct {
	Name        string
	Nickname    string
	CallbackURL string
}

// EmailChangeInput is the body of request-email-change.
type EmailChangeInput struct {
	NewEmail    string
	CallbackURL string
}

// PasswordChangeInput is the body of request-password-change.
type PasswordChangeInput struct {
	CurrentPassword string
	NewPassword     string
	CallbackURL     string
}

// requestedByUser marks changes the account owner asked for.
const requestedByUser = "user"

// noticeTTL is how long a notice without a link (email changed, password
// changed) may wait for delivery before the worker gives up.
const noticeTTL = 24 * time.Hour

// RequestProfileChange mails u a link that sets the given name and
// nickname once confirmed.
func (s *Service) RequestProfileChange(ctx context.Context, u *account.User, in ProfileChangeInput) error {
	name, nickname := account.NormalizeName(in.Name), account.NormalizeNickname(in.Nickname)
	fields := platform.FieldErrors{}
	addFieldProblems(fields, account.ValidateName(name))
	addFieldProblems(fields, account.ValidateNickname(nickname))
	if in.CallbackURL == "" {
		fields.Add("callbackURL", "is required")
	}
	if err := fields.Err(); err != nil {
		return err
	}
	callback, err := s.checkCallback(in.CallbackURL)
	if err != nil {
		return err
	}
	if err := s.limit(ctx, userKey(u.ID), recipientKey(u.Email)); err != nil {
		return err
	}
	_, err = s.start(ctx, startParams{
		userID: u.ID,
		change: Change{Type: TypeProfile, Step: StepConfirm, NewName: name, NewNickname: nickname,
			CallbackURL: callback, RequestedBy: requestedByUser},
		check: s.nicknameFree(nickname),
		send:  true,
	})
	return err
}

// RequestEmailChange starts the two-step email change: the first link goes
// to u's current address; the new address hears nothing until the owner of
// the old one approves.
func (s *Service) RequestEmailChange(ctx context.Context, u *account.User, in EmailChangeInput) error {
	newEmail := account.NormalizeEmail(in.NewEmail)
	fields := platform.FieldErrors{}
	switch {
	case newEmail == "":
		fields.Add("newEmail", "is required")
	case !account.ValidEmail(newEmail):
		fields.Add("newEmail", "Invalid email address")
	case newEmail == u.Email:
		fields.Add("newEmail", "is already the account's email")
	}
	if in.CallbackURL == "" {
		fields.Add("callbackURL", "is required")
	}
	if err := fields.Err(); err != nil {
		return err
	}
	callback, err := s.checkCallback(in.CallbackURL)
	if err != nil {
		return err
	}
	// Both addresses will get mail if the change goes ahead; neither may
	// be flooded by repeated requests.
	if err := s.limit(ctx, userKey(u.ID), recipientKey(u.Email), recipientKey(newEmail)); err != nil {
		return err
	}
	_, err = s.start(ctx, startParams{
		userID: u.ID,
		change: Change{Type: TypeEmail, Step: StepOldEmail, NewEmail: newEmail,
			CallbackURL: callback, RequestedBy: requestedByUser},
		check: s.emailFree(newEmail),
		send:  true,
	})
	return err
}

// RequestPasswordChange checks u's current password, stores the hash of
// the new one with the pending change and mails the confirmation link.
// Wrong passwords count against the per-user rate limit like any request,
// so the endpoint cannot be used to guess the password.
func (s *Service) RequestPasswordChange(ctx context.Context, u *account.User, in PasswordChangeInput) error {
	fields := platform.FieldErrors{}
	if in.CurrentPassword == "" {
		fields.Add("currentPassword", "is required")
	}
	if p := newPasswordProblem(in.NewPassword); p != "" {
		fields.Add("newPassword", p)
	}
	if in.CallbackURL == "" {
		fields.Add("callbackURL", "is required")
	}
	if err := fields.Err(); err != nil {
		return err
	}
	callback, err := s.checkCallback(in.CallbackURL)
	if err != nil {
		return err
	}
	// Counted before the password is checked, so wrong guesses count too.
	if err := s.limit(ctx, userKey(u.ID)); err != nil {
		return err
	}
	if err := s.accounts.VerifyPassword(ctx, u, in.CurrentPassword); err != nil {
		return s.refundUnhashed(ctx, err, userKey(u.ID))
	}
	if in.NewPassword == in.CurrentPassword {
		return platform.Invalid("newPassword", "must differ from the current password")
	}
	hash, err := s.accounts.HashPassword(ctx, in.NewPassword)
	if err != nil {
		return err
	}
	if err := s.limit(ctx, recipientKey(u.Email)); err != nil {
		return err
	}
	_, err = s.start(ctx, startParams{
		userID: u.ID,
		change: Change{Type: TypePassword, Step: StepConfirm, NewPasswordHash: hash,
			CallbackURL: callback, RequestedBy: requestedByUser},
		// The password was checked against this hash; if it changed since,
		// the check proved nothing.
		expectBase: fingerprint(TypePassword, u),
		send:       true,
	})
	return err
}

// newPasswordProblem applies the account's password length rules (8 to
// 128 characters, counted as better-auth counts them) to a new password.
func newPasswordProblem(p string) string {
	if p == "" {
		return "is required"
	}
	switch platform.ErrorCode(account.CheckPassword(p)) {
	case "":
		return ""
	case account.CodePasswordTooShort:
		return fmt.Sprintf("must be at least %d characters", account.MinPasswordLen)
	case account.CodePasswordTooLong:
		return fmt.Sprintf("must be at most %d characters", account.MaxPasswordLen)
	}
	return "is not an acceptable password"
}

// addFieldProblems copies the per-field problems of a VALIDATION_ERROR
// from the account rules into fields.
func addFieldProblems(fields platform.FieldErrors, err error) {
	pe, ok := platform.As(err)
	if !ok {
		return
	}
	for field, problem := range pe.Fields {
		fields.Add(field, problem)
	}
}

// nicknameFree refuses a nickname another user holds, or a deleted
// account's within its quarantine, with the same answer.
func (s *Service) nicknameFree(nickname string) func(context.Context, Tx, *account.User) error {
	return func(ctx context.Context, tx Tx, u *account.User) error {
		taken, err := tx.NicknameTaken(ctx, u.Realm, nickname, u.ID)
		if err == nil && !taken {
			taken, err = tx.Quarantined(ctx, account.QuarantineNicknameKey(s.secret, u.Realm, nickname), s.clock())
		}
		if err != nil {
			return err
		}
		if taken {
			return account.ErrNicknameTaken
		}
		return nil
	}
}

// emailFree refuses an email another user holds, or a deleted account's
// within its quarantine, with the same answer.
func (s *Service) emailFree(email string) func(context.Context, Tx, *account.User) error {
	return func(ctx context.Context, tx Tx, u *account.User) error {
		taken, err := tx.EmailTaken(ctx, u.Realm, email, u.ID)
		if err == nil && !taken {
			taken, err = tx.Quarantined(ctx, account.QuarantineEmailKey(s.secret, u.Realm, email), s.clock())
		}
		if err != nil {
			return err
		}
		if taken {
			return account.ErrEmailTaken
		}
		return nil
	}
}

// userKey counts request-* calls of a user.
func userKey(id uuid.UUID) string { return "profile|user|" + id.String() }

// recipientKey counts confirmation mails to an address; the limiter keeps
// only a hash of the key, so the rate table holds no addresses.
func recipientKey(addr string) string { return "profile|rcpt|" + account.NormalizeEmail(addr) }

// limit counts one request under each key, or refuses with RATE_LIMITED and
// the wait when any key has spent its budget (then nothing is counted).
// When the counts cannot be read the request is refused with the error:
// a limit that fails open is no limit.
func (s *Service) limit(ctx context.Context, keys ...string) error {
	if s.rule.Off() {
		return nil
	}
	ok, wait, err := s.limiter.Allow(ctx, s.now(), s.checks(keys)...)
	if err != nil {
		return fmt.Errorf("rate limit: %w", err)
	}
	if !ok {
		return &platform.Error{Kind: platform.KindRateLimited, Code: platform.CodeRateLimited,
			Message: "Too many requests. Please try again later.", RetryAfter: max(wait, time.Second)}
	}
	return nil
}

// checks are keys under the request rule.
func (s *Service) checks(keys []string) []ratelimit.Check {
	checks := make([]ratelimit.Check, len(keys))
	for i, key := range keys {
		checks[i] = ratelimit.Check{Key: key, Rule: s.rule}
	}
	return checks
}

// refundUnhashed gives back the request counted under keys when err
// refused it before the password was hashed (the hasher was busy), so a
// retry through someone else's flood spends nothing. It returns err,
// joined with the refund's error should that fail.
func (s *Service) refundUnhashed(ctx context.Context, err error, keys ...string) error {
	if s.rule.Off() || !account.RefusedBeforeHash(err) {
		return err
	}
	if rerr := s.limiter.Refund(context.WithoutCancel(ctx), s.checks(keys)...); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// startParams describe a new pending change.
type startParams struct {
	userID uuid.UUID
	// change carries the type, first step, new values, callback and requester.
	change Change
	// expectBase, when set, must equal the user's fingerprint for the type.
	expectBase string
	// check runs on the locked user: the conflicts of the change.
	check func(context.Context, Tx, *account.User) error
	// send mails the link; without it the caller hands the token over.
	send bool
	// audit, when set, is recorded in the same transaction (support actions).
	audit *audit.Entry
}

// started is a pending change that was written.
type started struct {
	change    Change
	user      *account.User
	token     string
	link      string
	expiresAt time.Time
	recipient string
	messageID *uuid.UUID
}

// start writes a pending change, superseding the user's earlier pending
// change of its type, with its first token and (if send) its message, all
// in one transaction.
func (s *Service) start(ctx context.Context, p startParams) (*started, error) {
	now := s.clock()
	token, hash, err := s.newToken()
	if err != nil {
		return nil, err
	}
	res := &started{token: token, link: confirmationLink(p.change.CallbackURL, token), expiresAt: now.Add(s.ttl)}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		u, err := tx.LockUser(ctx, p.userID)
		if err != nil {
			return err
		}
		if p.expectBase != "" && fingerprint(p.change.Type, u) != p.expectBase {
			return ErrChangeConflict
		}
		if p.check != nil {
			if err := p.check(ctx, tx, u); err != nil {
				return err
			}
		}
		c := p.change
		if c.ID, err = uuid.NewV7(); err != nil {
			return err
		}
		c.UserID, c.Status, c.BaseFingerprint = u.ID, StatusPending, fingerprint(c.Type, u)
		c.CreatedAt, c.UpdatedAt = now, now
		if err := tx.SupersedePending(ctx, u.ID, now, c.Type); err != nil {
			return err
		}
		if err := tx.InsertChange(ctx, &c); err != nil {
			return err
		}
		if err := tx.InsertToken(ctx, &Token{Hash: hash, ChangeID: c.ID, UserID: u.ID, Type: c.Type, Step: c.Step,
			CreatedAt: now, ExpiresAt: res.expiresAt}); err != nil {
			return err
		}
		res.change, res.user = c, u
		res.recipient = recipientOf(&c, c.Step, u)
		if p.send {
			msg, err := s.confirmationMail(&c, c.Step, u, res.link, res.expiresAt)
			if err != nil {
				return err
			}
			if err := tx.EnqueueMail(ctx, msg); err != nil {
				return err
			}
			res.messageID = &msg.ID
		}
		if p.audit != nil {
			p.audit.At, p.audit.Target = now, u.ID.String()
			p.audit.Details["changeId"] = c.ID.String()
			if err := tx.InsertAudit(ctx, p.audit); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("start %s change: %w", p.change.Type, err)
	}
	if p.send {
		s.wake()
	}
	return res, nil
}

// recipientOf is who confirms step of c: the new address for the second
// step of an email change, the account's address otherwise.
func recipientOf(c *Change, step Step, u *account.User) string {
	if step == StepNewEmail {
		return c.NewEmail
	}
	return u.Email
}

// confirmationMail composes the message carrying the link for step of c.
func (s *Service) confirmationMail(c *Change, step Step, u *account.User, link string, expiresAt time.Time) (*mail.Outgoing, error) {
	// The new address of an email change has not shown it is the account's.
	verified := u.EmailVerified && step != StepNewEmail
	data := mail.Data{Name: mail.GreetingName(u.Name, verified), Nickname: u.Nickname, Email: u.Email, Link: link, ExpiresAt: expiresAt}
	var tmpl mail.Template
	switch {
	case c.Type == TypeProfile:
		tmpl, data.NewName, data.NewNickname = mail.TemplateProfileChange, c.NewName, c.NewNickname
	case c.Type == TypeEmail && step == StepOldEmail:
		tmpl, data.NewEmail = mail.TemplateEmailChangeOld, c.NewEmail
	case c.Type == TypeEmail && step == StepNewEmail:
		tmpl, data.NewEmail = mail.TemplateEmailChangeNew, c.NewEmail
	case c.Type == TypePassword:
		tmpl = mail.TemplatePasswordChange
	default:
		return nil, fmt.Errorf("no confirmation mail for %s step %s", c.Type, step)
	}
	return s.composer.Compose(tmpl, recipientOf(c, step, u), data, expiresAt)
}
