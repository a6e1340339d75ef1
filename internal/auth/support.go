package auth

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Audit actions of the support operations.
const (
	ActionAdminCreate    = "admin.create"
	ActionSessionsList   = "sessions.list"
	ActionSessionsRevoke = "sessions.revoke"
)

// CodeSessionNotFound: the named session does not exist for that user.
const CodeSessionNotFound = "SESSION_NOT_FOUND"

// CreateAdmin creates an administrator account. It is the only way one
// comes to exist (the admin mount has no sign-up), and it is audited under
// actor in the same transaction.
func (s *Service) CreateAdmin(ctx context.Context, actor string, in account.NewUser) (*account.User, error) {
	if actor == "" {
		return nil, errNoActor
	}
	u, err := s.accounts.Prepare(ctx, account.RealmAdmin, in)
	if err != nil {
		return nil, err
	}
	e := s.auditEntry(actor, ActionAdminCreate, u.ID.String(), "", map[string]string{"email": u.Email, "role": u.Role})
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.InsertUser(ctx, u); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, e)
	})
	if err != nil {
		return nil, fmt.Errorf("create admin: %w", err)
	}
	return u, nil
}

// SupportListSessions returns the user named by an email or id in realm
// and the user's live sessions, for support staff; the look is audited.
// The sessions carry no token.
func (s *Service) SupportListSessions(ctx context.Context, actor string, realm account.Realm, userRef string) (*account.User, []Session, error) {
	if actor == "" {
		return nil, nil, errNoActor
	}
	u, err := s.accounts.Find(ctx, realm, userRef)
	if err != nil {
		return nil, nil, err
	}
	e := s.auditEntry(actor, ActionSessionsList, u.ID.String(), "", map[string]string{"realm": string(realm)})
	if err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error { return tx.InsertAudit(ctx, e) }); err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	list, err := s.store.ListUserSessions(ctx, u.ID, s.clock())
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	for i := range list {
		list[i].Token = ""
	}
	return u, list, nil
}

// SupportRevokeSessions ends the sessions of the user named by an email or
// id in realm — one session when sessionID is set, else all — and records
// who did it and why in the same transaction. The user is signed out on
// their very next request.
func (s *Service) SupportRevokeSessions(ctx context.Context, actor string, realm account.Realm, userRef string, sessionID uuid.UUID, reason string) (*account.User, int, error) {
	if actor == "" {
		return nil, 0, errNoActor
	}
	if len(reason) > 500 {
		return nil, 0, platform.Invalid("reason", "must be at most 500 characters")
	}
	u, err := s.accounts.Find(ctx, realm, userRef)
	if err != nil {
		return nil, 0, err
	}
	details := map[string]string{"realm": string(realm)}
	if sessionID != uuid.Nil {
		details["session"] = sessionID.String()
	}
	e := s.auditEntry(actor, ActionSessionsRevoke, u.ID.String(), reason, details)
	var n int
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		n, err = tx.DeleteSessions(ctx, u.ID, SessionMatch{ID: sessionID})
		if err != nil {
			return err
		}
		if sessionID != uuid.Nil && n == 0 {
			return ErrSessionNotFound // nothing done, nothing to record
		}
		e.Details["revoked"] = strconv.Itoa(n)
		return tx.InsertAudit(ctx, e)
	})
	if errors.Is(err, ErrSessionNotFound) {
		return nil, 0, platform.Errorf(platform.KindNotFound, CodeSessionNotFound, "%s has no session %s", u.Email, sessionID)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("revoke sessions: %w", err)
	}
	s.ended(ctx, u.ID, EndedRevoked)
	return u, n, nil
}

// errNoActor: every support action names who did it.
var errNoActor = errors.New("support action without an actor")

func (s *Service) auditEntry(actor, action, target, reason string, details map[string]string) *audit.Entry {
	return &audit.Entry{At: s.clock(), Actor: actor, Action: action, Target: target, Reason: reason, Details: details}
}
