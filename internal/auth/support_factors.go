package auth

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
)

// FactorReset is what a support reset of second factors did.
type FactorReset struct {
	User            *account.User `json:"user"`
	TOTPRemoved     bool          `json:"totpRemoved"`
	PasskeysRemoved int           `json:"passkeysRemoved"`
	SessionsEnded   int           `json:"sessionsEnded"`
}

// SupportResetFactors removes every second factor and passkey of the user named by an
// email or id in realm, for one who lost them. It is never silent: a
// reason is required and audited under actor, the user is mailed, and all
// their sessions end, so whoever asked must sign in again on the password
// and enrol afresh (ASVS 6.4.3: a reset never quietly lowers the bar).
func (s *Service) SupportResetFactors(ctx context.Context, actor string, realm account.Realm, userRef, reason string) (*FactorReset, error) {
	if actor == "" {
		return nil, errNoActor
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > 500 {
		return nil, platform.Invalid("reason", "is required (at most 500 characters): say why, e.g. the ticket and how the owner was verified")
	}
	u, err := s.accounts.Find(ctx, realm, userRef)
	if err != nil {
		return nil, err
	}
	removed, err := s.factors.DeleteTwoFactor(ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("reset factors: %w", err)
	}
	passkeys := 0
	if s.passkeys != nil {
		if passkeys, err = s.passkeys.DeletePasskeys(ctx, u.ID); err != nil {
			return nil, fmt.Errorf("reset passkeys: %w", err)
		}
	}
	n, err := s.RevokeUserSessions(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	m, err := s.mailer.Compose(mail.TemplateSecurityChange, u.Email, mail.Data{Name: u.Name, Email: u.Email, Nickname: u.Nickname,
		Change: "Support removed the second factors and passkeys of your account at your request, and signed out every device. Sign in with your password and enrol a second factor again."},
		now.Add(s.opts.TokenTTL))
	if err != nil {
		return nil, fmt.Errorf("compose security mail: %w", err)
	}
	e := s.auditEntry(actor, ActionFactorsReset, u.ID.String(), reason, map[string]string{
		"realm": string(realm), "totp": strconv.FormatBool(removed), "passkeys": strconv.Itoa(passkeys), "sessions": strconv.Itoa(n)})
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.EnqueueMail(ctx, m); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, e)
	})
	if err != nil {
		return nil, fmt.Errorf("record factor reset: %w", err)
	}
	s.mailer.Wake()
	return &FactorReset{User: u, TOTPRemoved: removed, PasskeysRemoved: passkeys, SessionsEnded: n}, nil
}
