package lifecycle

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// MaxFind bounds a find.
const MaxFind = 100

// AccountStatus is an account as support sees it: its profile and
// suspension, or only the tombstone of a deleted one.
type AccountStatus struct {
	Status     string           `json:"status"` // active, suspended or deleted
	User       *account.User    `json:"user,omitempty"`
	Suspension *auth.Suspension `json:"suspension,omitempty"`
	Tombstone  *Tombstone       `json:"tombstone,omitempty"`
}

// Statuses of AccountStatus.
const (
	StatusActive    = "active"
	StatusSuspended = "suspended"
	StatusDeleted   = "deleted"
)

// Show answers what support asks about one account: active, suspended
// (until when, why) or deleted (when, why). A deleted account is found
// by its id only: its email is no longer held.
func (s *Service) Show(ctx context.Context, realm account.Realm, userRef string) (*AccountStatus, error) {
	u, err := s.auth.Accounts().Find(ctx, realm, userRef)
	if errors.Is(err, account.ErrNotFound) {
		id, perr := uuid.Parse(userRef)
		if perr != nil {
			return nil, err
		}
		ts, terr := s.store.Tombstone(ctx, id)
		if terr != nil {
			return nil, err
		}
		return &AccountStatus{Status: StatusDeleted, Tombstone: ts}, nil
	}
	if err != nil {
		return nil, err
	}
	st := &AccountStatus{Status: StatusActive, User: u}
	if st.Suspension, err = s.SuspensionOf(ctx, u); err != nil {
		return nil, err
	}
	if st.Suspension != nil {
		st.Status = StatusSuspended
	}
	return st, nil
}

// Find lists accounts of realm whose email or nickname starts with
// prefix (at least 3 characters), at most limit (1-MaxFind).
func (s *Service) Find(ctx context.Context, realm account.Realm, prefix string, limit int) ([]*account.User, error) {
	prefix = strings.TrimSpace(prefix)
	if len(prefix) < 3 || len(prefix) > 254 {
		return nil, platform.Invalid("query", "must be 3-254 characters")
	}
	if limit < 1 || limit > MaxFind {
		return nil, platform.Invalid("limit", "must be 1-100")
	}
	return s.store.FindUsers(ctx, realm, prefix, limit)
}
