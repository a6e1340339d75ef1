// The end of an account as sessions see it: the gate every new session
// passes (suspension), the freshness a sensitive action asks of a session,
// and ending a user's sessions inside a larger transaction.

package auth

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Why sessions ended, beside the reasons of auth.go. Streams hear
// "revoked" for both, the value the published event contract has: a
// client learns the cause on its next sign-in (ACCOUNT_SUSPENDED) or
// from its own request (deletion).
const (
	EndedAccountDeleted   = EndedRevoked
	EndedAccountSuspended = EndedRevoked
)

// ErrUserGone is what Tx.AdmitSession returns when the user no longer
// exists (deleted between the credential check and the session).
var ErrUserGone = errors.New("user gone")

// Suspension bars an account from signing in until Until (nil: until
// lifted).
type Suspension struct {
	UserID    uuid.UUID  `json:"userId"`
	Reason    string     `json:"reason"`
	Actor     string     `json:"actor"`
	Until     *time.Time `json:"until"`
	CreatedAt time.Time  `json:"createdAt"`
}

// Live reports whether the suspension still holds at now: one whose
// until has passed lifts itself.
func (s *Suspension) Live(now time.Time) bool {
	return s != nil && (s.Until == nil || now.Before(*s.Until))
}

// SuspendedError is the refusal a suspended account gets on every way in:
// 403 ACCOUNT_SUSPENDED with details.until (null when indefinite).
func SuspendedError(s *Suspension) error {
	var until any
	if s.Until != nil {
		until = s.Until.UTC().Format(time.RFC3339)
	}
	return platform.Errorf(platform.KindForbidden, platform.CodeAccountSuspended,
		"This account is suspended").WithDetails("until", until)
}

// admitSession is the one gate a new session of an existing user passes,
// whatever way in it came by (password, provider, passkey, guest upgrade):
// inside the transaction that inserts the session, it holds the user row
// so that a suspension or deletion committing at the same moment either
// sees the session (and ends it) or is seen here.
func (s *Service) admitSession(ctx context.Context, tx Tx, u *account.User) error {
	susp, err := tx.AdmitSession(ctx, u.ID)
	if errors.Is(err, ErrUserGone) {
		return account.ErrInvalidCredentials
	}
	if err != nil {
		return err
	}
	if susp.Live(s.clock()) {
		return SuspendedError(susp)
	}
	return nil
}

// EndUserSessionsTx ends every session of userID inside tx, as
// RevokeUserSessions does on its own. The returned function tells every
// replica (caches, event streams) and must be called once tx committed.
func (s *Service) EndUserSessionsTx(ctx context.Context, tx Tx, userID uuid.UUID, reason string) (func(context.Context), error) {
	if _, err := tx.DeleteSessions(ctx, userID, SessionMatch{}); err != nil {
		return nil, err
	}
	return func(ctx context.Context) { s.ended(ctx, userID, reason) }, nil
}

// LimitKeys are the rate-limit keys of this package that name the account
// of email in realm, so that deleting the account can drop them.
func LimitKeys(realm account.Realm, email string) []string {
	email = account.NormalizeEmail(email)
	keys := make([]string, 0, 4)
	for _, action := range []string{actionSignIn, actionSignUp, actionResetRequest, actionVerifyMail} {
		keys = append(keys, action+"|account|"+string(realm)+"|"+email)
	}
	return keys
}

// checkQuarantine refuses a new account whose email or nickname belonged
// to an account deleted within the quarantine, with the same answer as a
// taken one, so that sign-up does not tell that the account was deleted.
func (s *Service) checkQuarantine(ctx context.Context, tx Tx, u *account.User) error {
	keys := account.QuarantineKeys(s.opts.Secret, u.Realm, u.Email, u.Nickname)
	for i, key := range keys {
		held, err := tx.Quarantined(ctx, key, s.clock())
		if err != nil {
			return err
		}
		if held && i == 0 {
			return account.ErrEmailTaken
		}
		if held {
			return account.ErrNicknameTaken
		}
	}
	return nil
}
