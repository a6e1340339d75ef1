package profile

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Confirm applies the step of the pending change that token confirms.
// Everything happens in one transaction: the token is consumed with a
// conditional update (of concurrent confirmations exactly one wins), the
// conflicts are checked again, the change is applied, and any mail it
// causes is enqueued. Nothing is written when any of it fails.
func (s *Service) Confirm(ctx context.Context, token string) (*Confirmation, error) {
	if token == "" {
		return nil, platform.Invalid("token", "is required")
	}
	if !wellFormedToken(token) {
		return nil, ErrInvalidToken
	}
	hash := s.hashToken(token)
	now := s.clock()
	var (
		res    *Confirmation
		sent   bool
		userID uuid.UUID
	)
	err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		tok, err := tx.TokenByHash(ctx, hash)
		if err != nil {
			return err
		}
		if err := usable(tok, now); err != nil {
			return err
		}
		// The user first, as every transaction here locks it first.
		userID = tok.UserID
		u, err := tx.LockUser(ctx, tok.UserID)
		if err != nil {
			return err
		}
		ok, err := tx.ConsumeToken(ctx, hash, now)
		if err != nil {
			return err
		}
		if !ok {
			// Another confirmation took it meanwhile.
			return ErrInvalidToken
		}
		c, err := tx.LockChange(ctx, tok.ChangeID)
		if err != nil {
			return err
		}
		if c.Status != StatusPending || c.Step != tok.Step || c.Type != tok.Type {
			return ErrInvalidToken
		}
		if fingerprint(c.Type, u) != c.BaseFingerprint {
			return ErrChangeConflict
		}
		res, sent, err = s.apply(ctx, tx, c, u, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("confirm change: %w", err)
	}
	if sent {
		s.wake()
	}
	if s.watcher != nil && res.Step == ResultCompleted {
		reason := "profile_changed" // the name or email sessions show
		if res.Type == TypePassword {
			reason = "password_changed"
		}
		s.watcher.SessionsEnded(ctx, userID, reason)
	}
	return res, nil
}

// usable says why a token cannot be confirmed, or nil. Unknown, used and
// superseded tokens get one answer.
func usable(tok *Token, now time.Time) error {
	switch {
	case tok == nil, tok.ConsumedAt != nil, tok.SupersededAt != nil:
		return ErrInvalidToken
	case !tok.ExpiresAt.After(now):
		return ErrTokenExpired
	}
	return nil
}

// apply carries out the confirmed step of c for the locked user u and
// reports whether it enqueued mail.
func (s *Service) apply(ctx context.Context, tx Tx, c *Change, u *account.User, now time.Time) (*Confirmation, bool, error) {
	switch {
	case c.Type == TypeProfile:
		return s.applyProfile(ctx, tx, c, u, now)
	case c.Type == TypeEmail && c.Step == StepOldEmail:
		return s.applyOldEmail(ctx, tx, c, u, now)
	case c.Type == TypeEmail && c.Step == StepNewEmail:
		return s.applyNewEmail(ctx, tx, c, u, now)
	case c.Type == TypePassword:
		return s.applyPassword(ctx, tx, c, u, now)
	}
	return nil, false, fmt.Errorf("change %s: unknown type %q at step %q", c.ID, c.Type, c.Step)
}

func (s *Service) applyProfile(ctx context.Context, tx Tx, c *Change, u *account.User, now time.Time) (*Confirmation, bool, error) {
	if err := s.nicknameFree(c.NewNickname)(ctx, tx, u); err != nil {
		return nil, false, err
	}
	if err := tx.UpdateProfile(ctx, u.ID, c.NewName, c.NewNickname, now); err != nil {
		return nil, false, err
	}
	u.Name, u.Nickname, u.UpdatedAt = c.NewName, c.NewNickname, now
	if err := s.complete(ctx, tx, c, now); err != nil {
		return nil, false, err
	}
	return &Confirmation{Status: true, Type: TypeProfile, Step: ResultCompleted, User: u}, false, nil
}

// applyOldEmail: the old address approved; now the new one must prove it
// receives mail, with a token of its own and a fresh window.
func (s *Service) applyOldEmail(ctx context.Context, tx Tx, c *Change, u *account.User, now time.Time) (*Confirmation, bool, error) {
	if err := s.emailFree(c.NewEmail)(ctx, tx, u); err != nil {
		return nil, false, err
	}
	token, hash, err := s.newToken()
	if err != nil {
		return nil, false, err
	}
	expires := now.Add(s.ttl)
	c.Step, c.UpdatedAt = StepNewEmail, now
	if err := tx.UpdateChange(ctx, c); err != nil {
		return nil, false, err
	}
	if err := tx.InsertToken(ctx, &Token{Hash: hash, ChangeID: c.ID, UserID: u.ID, Type: TypeEmail, Step: StepNewEmail,
		CreatedAt: now, ExpiresAt: expires}); err != nil {
		return nil, false, err
	}
	msg, err := s.confirmationMail(c, StepNewEmail, u, confirmationLink(c.CallbackURL, token), expires)
	if err != nil {
		return nil, false, err
	}
	if err := tx.EnqueueMail(ctx, msg); err != nil {
		return nil, false, err
	}
	return &Confirmation{Status: true, Type: TypeEmail, Step: ResultNewEmailVerificationSent, User: u}, true, nil
}

func (s *Service) applyNewEmail(ctx context.Context, tx Tx, c *Change, u *account.User, now time.Time) (*Confirmation, bool, error) {
	if err := s.emailFree(c.NewEmail)(ctx, tx, u); err != nil {
		return nil, false, err
	}
	if err := tx.UpdateEmail(ctx, u.ID, c.NewEmail, now); err != nil {
		return nil, false, err
	}
	old := *u
	u.Email, u.EmailVerified, u.UpdatedAt = c.NewEmail, true, now
	if err := s.complete(ctx, tx, c, now); err != nil {
		return nil, false, err
	}
	// The old address learns that it no longer controls the account.
	if err := s.notify(ctx, tx, mail.TemplateEmailChanged, old.Email,
		mail.Data{Name: mail.GreetingName(u.Name, old.EmailVerified), Nickname: u.Nickname, Email: old.Email, NewEmail: u.Email}, now); err != nil {
		return nil, false, err
	}
	return &Confirmation{Status: true, Type: TypeEmail, Step: ResultCompleted, User: u}, true, nil
}

func (s *Service) applyPassword(ctx context.Context, tx Tx, c *Change, u *account.User, now time.Time) (*Confirmation, bool, error) {
	if err := tx.SetPasswordHash(ctx, u.ID, c.NewPasswordHash, now); err != nil {
		return nil, false, err
	}
	if _, err := tx.RevokeSessions(ctx, u.ID); err != nil {
		return nil, false, err
	}
	if err := s.complete(ctx, tx, c, now); err != nil {
		return nil, false, err
	}
	// Whoever else may have queued changes with the old password loses them.
	if err := tx.SupersedePending(ctx, u.ID, now); err != nil {
		return nil, false, err
	}
	if err := s.notify(ctx, tx, mail.TemplatePasswordChanged, u.Email,
		mail.Data{Name: mail.GreetingName(u.Name, u.EmailVerified), Nickname: u.Nickname, Email: u.Email}, now); err != nil {
		return nil, false, err
	}
	return &Confirmation{Status: true, Type: TypePassword, Step: ResultCompleted, RequiresLogin: true, User: nil}, true, nil
}

func (s *Service) complete(ctx context.Context, tx Tx, c *Change, now time.Time) error {
	c.Status, c.Step, c.UpdatedAt, c.CompletedAt = StatusCompleted, StepCompleted, now, &now
	return tx.UpdateChange(ctx, c)
}

// notify enqueues a notice without a link.
func (s *Service) notify(ctx context.Context, tx Tx, tmpl mail.Template, to string, data mail.Data, now time.Time) error {
	msg, err := s.composer.Compose(tmpl, to, data, now.Add(noticeTTL))
	if err != nil {
		return err
	}
	return tx.EnqueueMail(ctx, msg)
}
