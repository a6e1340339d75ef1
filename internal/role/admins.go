package role

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/platform"
)

// ActionSetRole is the audit action of a role change.
const ActionSetRole = "admin.set-role"

// Error codes of role changes.
const (
	// CodeAdminNotFound: no administrator has that id or email.
	CodeAdminNotFound = "ADMIN_NOT_FOUND"
	// CodeLastAdmin: the change would leave no administrator with the admin role.
	CodeLastAdmin = "LAST_ADMIN"
)

// AdminRef names an administrator account by id or by email; exactly one
// is set.
type AdminRef struct {
	ID    uuid.UUID
	Email string
}

// String is the ref as the audit trail and messages show it.
func (r AdminRef) String() string {
	if r.ID != uuid.Nil {
		return r.ID.String()
	}
	return r.Email
}

// AdminAccount is an administrator as role changes see it.
type AdminAccount struct {
	ID    uuid.UUID `json:"id"`
	Email string    `json:"email"`
	Name  string    `json:"name"`
	Role  Role      `json:"role"`
}

// Change is the result of SetRole.
type Change struct {
	Admin   AdminAccount `json:"admin"`
	From    Role         `json:"from"`
	To      Role         `json:"to"`
	Changed bool         `json:"changed"`
}

// Store changes administrators' roles.
type Store interface {
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Tx is the transaction a role change runs in.
type Tx interface {
	// LockAdmins reads every administrator account and holds them until
	// the transaction ends, always in the same order.
	LockAdmins(ctx context.Context) ([]AdminAccount, error)
	SetAdminRole(ctx context.Context, id uuid.UUID, to Role, at time.Time) error
	InsertAudit(ctx context.Context, e *audit.Entry) error
}

// Admins changes administrators' roles.
type Admins struct {
	store Store
	now   func() time.Time
	// Sessions hears, after the commit, that an administrator's role
	// changed, so that no process keeps serving their sessions with the
	// old role from its cache; nil ignores it.
	Sessions SessionWatcher
}

// SessionWatcher hears that what a user's sessions show changed
// (auth.Service.SessionsEnded).
type SessionWatcher interface {
	SessionsEnded(ctx context.Context, userID uuid.UUID, reason string)
}

// NewAdmins returns the role-change service.
func NewAdmins(store Store, now func() time.Time) *Admins {
	return &Admins{store: store, now: now}
}

// ErrAdminNotFound is returned for an id or email no administrator has.
var ErrAdminNotFound = platform.Errorf(platform.KindNotFound, CodeAdminNotFound, "no administrator has that id or email")

// setRole finds the administrator ref names among every administrator,
// read under lock so that two concurrent demotions cannot both see a
// second holder of the admin role, and when the last-admin guard allows
// and the role differs, sets it and records e in tx. It returns the
// account as it was before.
func setRole(ctx context.Context, tx Tx, ref AdminRef, to Role, e *audit.Entry) (*AdminAccount, error) {
	admins, err := tx.LockAdmins(ctx)
	if err != nil {
		return nil, err
	}
	var prev *AdminAccount
	holders := 0
	for i, a := range admins {
		if a.Role == Admin {
			holders++
		}
		if (ref.ID != uuid.Nil && a.ID == ref.ID) || (ref.ID == uuid.Nil && a.Email == ref.Email) {
			prev = &admins[i]
		}
	}
	if prev == nil {
		return nil, ErrAdminNotFound
	}
	if err := guardLastAdmin(*prev, to, holders); err != nil {
		return nil, err
	}
	if prev.Role == to {
		return prev, nil
	}
	if err := tx.SetAdminRole(ctx, prev.ID, to, e.At); err != nil {
		return nil, err
	}
	e.Target = "admin:" + prev.ID.String()
	e.Details = map[string]string{"email": prev.Email, "from": string(prev.Role), "to": string(to)}
	return prev, tx.InsertAudit(ctx, e)
}

// guardLastAdmin refuses to take the admin role from the last holder, so
// that someone can always manage administrators from the console.
func guardLastAdmin(target AdminAccount, to Role, admins int) error {
	if target.Role == Admin && to != Admin && admins <= 1 {
		return platform.Errorf(platform.KindConflict, CodeLastAdmin,
			"%s is the last administrator with the admin role; give another administrator the admin role first", target.Email)
	}
	return nil
}

// SetRole gives the administrator ref names the role roleName, recording
// actor and reason in the audit trail in the same transaction. Setting the
// role an administrator already has changes and records nothing. The new
// role applies to the administrator's next request: every process's
// session cache forgets their sessions (Sessions).
func (a *Admins) SetRole(ctx context.Context, actor string, ref AdminRef, roleName, reason string) (*Change, error) {
	ref.Email = strings.ToLower(strings.TrimSpace(ref.Email))
	if (ref.ID == uuid.Nil) == (ref.Email == "") {
		return nil, platform.Invalid("admin", "name the administrator by id or by email, not both")
	}
	to, err := Parse(roleName)
	if err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if err := audit.CheckActorReason(actor, reason); err != nil {
		return nil, err
	}
	entry := &audit.Entry{At: a.now().UTC(), Actor: actor, Action: ActionSetRole, Reason: reason}
	var prev *AdminAccount
	err = a.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		prev, err = setRole(ctx, tx, ref, to, entry)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("set role of %s: %w", ref, err)
	}
	if prev.Role != to && a.Sessions != nil {
		a.Sessions.SessionsEnded(ctx, prev.ID, "role_changed")
	}
	after := *prev
	after.Role = to
	return &Change{Admin: after, From: prev.Role, To: to, Changed: prev.Role != to}, nil
}
