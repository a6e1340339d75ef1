package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// maxReason bounds a support reason.
const maxReason = 500

// Suspend bars an account from signing in until until (zero: until
// lifted). In the same transaction every session ends, and the user row
// is held so that a sign-in at the same moment either commits first (and
// its session ends here) or sees the suspension; once committed, every
// replica closes the account's streams.
func (s *Service) Suspend(ctx context.Context, actor string, realm account.Realm, userRef, reason string, until time.Time) (*auth.Suspension, error) {
	reason = strings.TrimSpace(reason)
	if err := checkReason(reason); err != nil {
		return nil, err
	}
	now := s.clock()
	if !until.IsZero() && !until.After(now) {
		return nil, platform.Errorf(platform.KindInvalid, platform.CodeValidation, "--until must be in the future")
	}
	u, err := s.auth.Accounts().Find(ctx, realm, userRef)
	if err != nil {
		return nil, err
	}
	susp := &auth.Suspension{UserID: u.ID, Reason: reason, Actor: actor, CreatedAt: now}
	details := map[string]string{"until": "indefinite"}
	if !until.IsZero() {
		t := until.UTC().Truncate(time.Millisecond)
		susp.Until, details["until"] = &t, t.Format(time.RFC3339)
	}
	var ended func(context.Context)
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if _, err := tx.LockUser(ctx, u.ID); err != nil {
			return err
		}
		if err := tx.SetSuspension(ctx, susp); err != nil {
			return err
		}
		if ended, err = s.auth.EndUserSessionsTx(ctx, tx, u.ID, auth.EndedAccountSuspended); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, &audit.Entry{At: now, Actor: actor, Action: ActionSuspend, Target: u.ID.String(),
			Reason: reason, Details: details})
	})
	if err != nil {
		return nil, fmt.Errorf("suspend account: %w", err)
	}
	ended(ctx)
	return susp, nil
}

// Unsuspend lifts an account's suspension; it reports whether there was
// one (an expired one counts: it is removed too).
func (s *Service) Unsuspend(ctx context.Context, actor string, realm account.Realm, userRef, reason string) (bool, error) {
	reason = strings.TrimSpace(reason)
	if err := checkReason(reason); err != nil {
		return false, err
	}
	u, err := s.auth.Accounts().Find(ctx, realm, userRef)
	if err != nil {
		return false, err
	}
	var had bool
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if had, err = tx.DeleteSuspension(ctx, u.ID); err != nil || !had {
			return err
		}
		return tx.InsertAudit(ctx, &audit.Entry{At: s.clock(), Actor: actor, Action: ActionUnsuspend, Target: u.ID.String(),
			Reason: reason, Details: map[string]string{}})
	})
	if err != nil {
		return false, fmt.Errorf("unsuspend account: %w", err)
	}
	return had, nil
}

// SuspensionOf returns the live suspension of a user, or nil.
func (s *Service) SuspensionOf(ctx context.Context, u *account.User) (*auth.Suspension, error) {
	susp, err := s.store.Suspension(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	if !susp.Live(s.clock()) {
		return nil, nil
	}
	return susp, nil
}

// checkReason refuses a missing or overlong reason; callers trim it first,
// so that a reason of blanks, from any way in, counts as none.
func checkReason(reason string) error {
	if reason == "" || len(reason) > maxReason {
		return platform.Errorf(platform.KindInvalid, platform.CodeValidation, "a reason of 1-%d bytes is required", maxReason)
	}
	return nil
}
