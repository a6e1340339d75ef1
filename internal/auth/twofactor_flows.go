package auth

import (
	"context"
	"encoding/base32"
	"errors"
	"fmt"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
)

// actionTwoFactor counts second-factor attempts in the shared limits.
const actionTwoFactor = "two-factor"

// Audit actions of the second factors.
const (
	ActionFactorAdded       = "factor.added"
	ActionFactorRemoved     = "factor.removed"
	ActionBackupCodesIssued = "factor.backup_codes"
	ActionFactorsReset      = "factor.reset"
)

// confirmPassword re-authenticates the principal with its password; it is
// what the enrolment routes ask for instead of a fresh session.
func (s *Service) confirmPassword(ctx context.Context, p *Principal, client Client, password string) error {
	if password == "" {
		return platform.Invalid("password", "is required")
	}
	if _, err := s.allow(ctx, actionTwoFactor, p.Realm, client, p.User.ID.String(), s.opts.Limits.LoginIP, s.opts.Limits.LoginAccount); err != nil {
		return err
	}
	return s.accounts.VerifyPassword(hashingFor(ctx, p.Realm, client, p.User.Email), p.User, password)
}

// EnableTOTP starts a TOTP enrolment after the password: a new seed and
// backup codes, shown once. The factor guards sign-in only after the
// first code is verified (VerifyTOTP with the session).
func (s *Service) EnableTOTP(ctx context.Context, p *Principal, client Client, password, issuer string) (*Enrolment, error) {
	if err := s.confirmPassword(ctx, p, client, password); err != nil {
		return nil, err
	}
	methods, _, err := s.secondFactors(ctx, p.User.ID)
	if err != nil {
		return nil, err
	}
	if len(methods) > 0 {
		return nil, errTOTPEnabled
	}
	if issuer == "" || len(issuer) > 64 {
		issuer = s.opts.Issuer
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: p.User.Email, Period: totpPeriod, Digits: totpDigits})
	if err != nil {
		return nil, fmt.Errorf("generate totp seed: %w", err)
	}
	sealed, err := s.keyring.Seal([]byte(key.Secret()), secretContext(p.User.ID))
	if err != nil {
		return nil, err
	}
	codes, hashes, err := newBackupCodes(p.User.ID)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	tf := &TwoFactor{UserID: p.User.ID, Secret: sealed, CreatedAt: now, UpdatedAt: now}
	if err := s.factors.PutTwoFactor(ctx, tf, hashes); err != nil {
		return nil, fmt.Errorf("enable totp: %w", err)
	}
	return &Enrolment{TOTPURI: key.URL(), BackupCodes: codes}, nil
}

// TOTPURI shows the enrolled seed again as an otpauth:// URI, after the password.
func (s *Service) TOTPURI(ctx context.Context, p *Principal, client Client, password string) (string, error) {
	if err := s.confirmPassword(ctx, p, client, password); err != nil {
		return "", err
	}
	_, tf, err := s.secondFactors(ctx, p.User.ID)
	if err != nil {
		return "", err
	}
	if tf == nil {
		return "", errTOTPNotEnabled
	}
	secret, err := s.keyring.Open(tf.Secret, secretContext(p.User.ID))
	if err != nil {
		return "", fmt.Errorf("open totp seed: %w", err)
	}
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(string(secret))
	if err != nil {
		return "", fmt.Errorf("decode totp seed: %w", err)
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: s.opts.Issuer, AccountName: p.User.Email, Period: totpPeriod,
		Digits: totpDigits, Secret: raw})
	if err != nil {
		return "", fmt.Errorf("totp uri: %w", err)
	}
	return key.URL(), nil
}

// GenerateBackupCodes replaces the backup codes after the password.
func (s *Service) GenerateBackupCodes(ctx context.Context, p *Principal, client Client, password string) ([]string, error) {
	if err := s.confirmPassword(ctx, p, client, password); err != nil {
		return nil, err
	}
	methods, _, err := s.secondFactors(ctx, p.User.ID)
	if err != nil {
		return nil, err
	}
	if len(methods) == 0 {
		return nil, errTOTPNotEnabled
	}
	codes, hashes, err := newBackupCodes(p.User.ID)
	if err != nil {
		return nil, err
	}
	if err := s.factors.ReplaceBackupCodes(ctx, p.User.ID, hashes); err != nil {
		return nil, fmt.Errorf("replace backup codes: %w", err)
	}
	return codes, s.notifyFactor(ctx, p.User, ActionBackupCodesIssued, "New backup codes were generated for your account; the old ones no longer work.")
}

// DisableTOTP removes the TOTP factor and its backup codes after the
// password, and opens a new session in place of the current one.
func (s *Service) DisableTOTP(ctx context.Context, p *Principal, client Client, password string) (*Principal, error) {
	if err := s.confirmPassword(ctx, p, client, password); err != nil {
		return nil, err
	}
	removed, err := s.factors.DeleteTwoFactor(ctx, p.User.ID)
	if err != nil {
		return nil, fmt.Errorf("disable totp: %w", err)
	}
	if !removed {
		return nil, errTOTPNotEnabled
	}
	if err := s.notifyFactor(ctx, p.User, ActionFactorRemoved, "The authenticator app was removed from your account."); err != nil {
		return nil, err
	}
	return s.rotateSession(ctx, p, client)
}

// SecondFactorProof is a TOTP or backup code offered for a challenge (no
// session) or by a signed-in user (confirming enrolment or re-authenticating).
type SecondFactorProof struct {
	Code   string
	Backup bool
	// ChallengeToken is the two_factor cookie's token when there is no session.
	ChallengeToken string
}

// VerifySecondFactor checks a proof and opens a new session: in place of
// the principal's (which then counts as fresh, and a first TOTP code
// completes enrolment), or for the challenge's user.
func (s *Service) VerifySecondFactor(ctx context.Context, p *Principal, client Client, proof SecondFactorProof) (*Principal, error) {
	if p != nil {
		if _, err := s.allow(ctx, actionTwoFactor, p.Realm, client, p.User.ID.String(), s.opts.Limits.LoginIP, s.opts.Limits.LoginAccount); err != nil {
			return nil, err
		}
		if err := s.checkProof(ctx, p.User, proof); err != nil {
			return nil, err
		}
		return s.rotateSession(ctx, p, client)
	}
	return s.completeChallenge(ctx, client, proof)
}

// completeChallenge spends one attempt of the challenge, checks the proof
// and, when it holds, consumes the challenge and opens the session.
func (s *Service) completeChallenge(ctx context.Context, client Client, proof SecondFactorProof) (*Principal, error) {
	if proof.ChallengeToken == "" || len(proof.ChallengeToken) > 256 {
		return nil, errInvalidChallenge
	}
	hash := HashToken(proof.ChallengeToken)
	c, err := s.factors.Challenge(ctx, hash)
	if errors.Is(err, ErrChallengeNotFound) || (err == nil && !s.clock().Before(c.ExpiresAt)) {
		return nil, errInvalidChallenge
	}
	if err != nil {
		return nil, fmt.Errorf("look up challenge: %w", err)
	}
	if _, err := s.allow(ctx, actionTwoFactor, c.Realm, client, c.UserID.String(), s.opts.Limits.LoginIP, s.opts.Limits.LoginAccount); err != nil {
		return nil, err
	}
	n, err := s.factors.CountChallengeAttempt(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("count attempt: %w", err)
	}
	if n > challengeAttempts {
		if _, err := s.factors.TakeChallenge(ctx, hash); err != nil {
			return nil, fmt.Errorf("end challenge: %w", err)
		}
		return nil, errTooManyAttempts
	}
	u, err := s.accounts.ByID(ctx, c.UserID)
	if err != nil {
		return nil, err
	}
	if err := s.checkProof(ctx, u, proof); err != nil {
		return nil, err
	}
	taken, err := s.factors.TakeChallenge(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("take challenge: %w", err)
	}
	if !taken {
		return nil, errInvalidChallenge
	}
	return s.OpenSession(ctx, u, c.Remember, client)
}

// checkProof checks a code against the user's factor, consuming the TOTP
// step or the backup code, and counts failures towards the lockout.
func (s *Service) checkProof(ctx context.Context, u *account.User, proof SecondFactorProof) error {
	_, tf, err := s.secondFactors(ctx, u.ID)
	if err != nil {
		return err
	}
	if tf == nil {
		return errTOTPNotEnabled
	}
	now := s.clock()
	if now.Before(tf.LockedUntil) {
		e := platform.Errorf(platform.KindRateLimited, CodeAccountLocked, "Account temporarily locked. Try again later.")
		e.RetryAfter = tf.LockedUntil.Sub(now)
		return e
	}
	ok, err := s.useCode(ctx, u, tf, proof, now)
	if err != nil {
		return err
	}
	if !ok {
		if err := s.factors.RecordFactorFailure(ctx, u.ID, accountFailures, now.Add(accountLockout), now); err != nil {
			return fmt.Errorf("record failure: %w", err)
		}
		if proof.Backup {
			return errInvalidBackupCode
		}
		return errInvalidCode
	}
	if tf.FailedCount > 0 {
		if err := s.factors.ClearFactorFailures(ctx, u.ID); err != nil {
			return fmt.Errorf("clear failures: %w", err)
		}
	}
	if !tf.Verified && !proof.Backup {
		return s.notifyFactor(ctx, u, ActionFactorAdded, "An authenticator app was added to your account; signing in now asks for its code.")
	}
	return nil
}

// useCode consumes a backup code or a TOTP step and reports whether the
// code was good and not used before.
func (s *Service) useCode(ctx context.Context, u *account.User, tf *TwoFactor, proof SecondFactorProof, now time.Time) (bool, error) {
	if proof.Backup {
		if !tf.Verified {
			return false, nil
		}
		code, ok := normalizeBackupCode(proof.Code)
		if !ok {
			return false, nil
		}
		used, err := s.factors.UseBackupCode(ctx, u.ID, backupCodeHash(u.ID, code))
		if err != nil {
			return false, fmt.Errorf("use backup code: %w", err)
		}
		return used, nil
	}
	secret, err := s.keyring.Open(tf.Secret, secretContext(u.ID))
	if err != nil {
		return false, fmt.Errorf("open totp seed: %w", err)
	}
	step, ok := matchTOTP(string(secret), proof.Code, now, tf.LastStep)
	if !ok {
		return false, nil
	}
	used, err := s.factors.UseTOTPStep(ctx, u.ID, step, now)
	if err != nil {
		return false, fmt.Errorf("use totp step: %w", err)
	}
	return used, nil
}

// rotateSession opens a new session for the principal's user and ends the
// old one, so a token seen before a factor was proved is worth nothing
// after it (ASVS 7.2.4).
func (s *Service) rotateSession(ctx context.Context, p *Principal, client Client) (*Principal, error) {
	next, err := s.OpenSession(ctx, p.User, p.Session.Remember, client)
	if err != nil {
		return nil, err
	}
	if _, err := s.RevokeSession(ctx, p, p.Token); err != nil {
		return nil, err
	}
	return next, nil
}

// notifyFactor mails the account's owner that a factor changed and
// records it in the audit log, in one transaction.
func (s *Service) notifyFactor(ctx context.Context, u *account.User, action, change string) error {
	now := s.clock()
	m, err := s.mailer.Compose(mail.TemplateSecurityChange, u.Email,
		mail.Data{Name: u.Name, Email: u.Email, Nickname: u.Nickname, Change: change}, now.Add(s.opts.TokenTTL))
	if err != nil {
		return fmt.Errorf("compose security mail: %w", err)
	}
	e := &audit.Entry{At: now, Actor: "user:" + u.ID.String(), Action: action, Target: u.ID.String(), Details: map[string]string{}}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.EnqueueMail(ctx, m); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, e)
	})
	if err != nil {
		return fmt.Errorf("notify factor change: %w", err)
	}
	s.mailer.Wake()
	return nil
}
