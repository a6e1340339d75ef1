// Package admin is the administrator plane: the support and live-ops use
// cases that the admin API, the web console and the CLI call alike. Each
// method takes the actor the audit trail records — "admin:<id>" for a
// signed-in administrator, "break-glass:<os user>" for the CLI on a
// database URL — and calls the service that owns the rule (auth for
// sessions, profile for tokens, mail for the outbox, liveops for the
// configuration, role for administrators' roles); this package adds the
// searches and views that span them: the console's bootstrap (Console)
// and the database-wide figures it and the metrics show (Gauges).
// Permissions are checked by the caller against package role, so that one
// route table lists what each action needs.
package admin

import (
	"context"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/role"
)

// Store holds the reads this package adds.
type Store interface {
	// SearchUsers returns players whose s.Field starts with s.Prefix and
	// sorts after s.After, in that field's order, at most s.Limit.
	SearchUsers(ctx context.Context, s Search) ([]UserSummary, error)
	// UserCounts counts what a player owns.
	UserCounts(ctx context.Context, userID uuid.UUID) (Counts, error)
	// ListAdmins returns every administrator by email, at most limit.
	ListAdmins(ctx context.Context, limit int) ([]role.AdminAccount, error)
}

// Deps are the services the plane calls.
type Deps struct {
	Store   Store
	Auth    *auth.Service
	Profile *profile.Service
	Outbox  *mail.Outbox
	Audit   *audit.Log
	LiveOps *liveops.Service
	Admins  *role.Admins
	// Queues are the ids of the matchmaking queue presets, the queues a
	// published live-ops event may feature.
	Queues []string
}

// Service is the administrator plane.
type Service struct{ d Deps }

// New returns the administrator plane over d.
func New(d Deps) *Service { return &Service{d: d} }

// ActorOf is how the audit trail names a signed-in administrator: by
// account id, never by a name the administrator chose.
func ActorOf(u *account.User) string { return "admin:" + u.ID.String() }

// BreakGlassActor is how the audit trail names someone using the CLI
// directly on the database, without signing in.
func BreakGlassActor(osUser string) string { return "break-glass:" + osUser }

// Me is the signed-in administrator and what its role allows.
func Me(u *account.User) CallerView {
	r := role.Role(u.Role)
	perms := role.Permissions(r)
	if perms == nil {
		perms = []role.Permission{}
	}
	return CallerView{ID: u.ID, Email: u.Email, Name: u.Name, Role: r, Permissions: perms}
}

// Roles is the permission table, most powerful role first.
func Roles() []RoleView {
	out := make([]RoleView, 0, len(role.All()))
	for _, r := range role.All() {
		out = append(out, RoleView{Role: r, Permissions: role.Permissions(r)})
	}
	return out
}
