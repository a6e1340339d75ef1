// Package role is the one permission table of administrator accounts:
// which roles exist and what each may do. The HTTP layer checks a route's
// permission against the caller's role here, the CLI validates --role here,
// and the admin console shows the caller's permissions from here, so a
// change to the table changes all three at once. Admins gives an
// administrator another role, audited, and never takes the admin role from
// its last holder.
package role

import (
	"slices"
	"strings"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Role names what an administrator account is for.
type Role string

// The roles, from most to least powerful.
const (
	// Admin may do everything, including managing other administrators.
	Admin Role = "admin"
	// LiveOps runs the game: live-ops configuration and map seeds.
	LiveOps Role = "liveops"
	// Support helps players: looks them up, revokes their sessions, issues tokens.
	Support Role = "support"
	// Viewer watches the console and the live-ops configuration without changing anything.
	Viewer Role = "viewer"
)

// Default is the role of an administrator created without one: the first
// administrator of a deployment must be able to do everything, including
// giving other administrators their roles.
const Default = Admin

// Permission is one thing an administrator may do.
type Permission string

// The permissions. Names are resource:verb so the console can group them.
const (
	ConsoleRead   Permission = "console:read"   // open the admin console (GET /api/admin/bootstrap)
	AuditRead     Permission = "audit:read"     // see the audit trail
	LiveOpsRead   Permission = "liveops:read"   // see the live-ops configuration
	LiveOpsWrite  Permission = "liveops:write"  // change live-ops configuration and map seeds
	PlayersRead   Permission = "players:read"   // look up player accounts
	SessionsWrite Permission = "sessions:write" // revoke sessions of players
	TokensIssue   Permission = "tokens:issue"   // issue confirmation or reset tokens for a player
	AdminsWrite   Permission = "admins:write"   // create administrators, change their roles, delete accounts
)

// table is the permission table. Keep each list in the order of the
// constants above; Permissions returns it as is.
var table = map[Role][]Permission{
	Admin:   {ConsoleRead, AuditRead, LiveOpsRead, LiveOpsWrite, PlayersRead, SessionsWrite, TokensIssue, AdminsWrite},
	LiveOps: {ConsoleRead, AuditRead, LiveOpsRead, LiveOpsWrite},
	Support: {ConsoleRead, AuditRead, PlayersRead, SessionsWrite, TokensIssue},
	Viewer:  {ConsoleRead, LiveOpsRead},
}

// CodeUnknownRole is returned for a role name that is not in the table.
const CodeUnknownRole = "UNKNOWN_ROLE"

// All returns every role, most powerful first.
func All() []Role { return []Role{Admin, LiveOps, Support, Viewer} }

// AllPermissions returns every permission in table order.
func AllPermissions() []Permission { return slices.Clone(table[Admin]) }

// Parse returns the role named s (case-insensitive, surrounding space
// ignored), or UNKNOWN_ROLE naming the valid roles.
func Parse(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := table[r]; ok {
		return r, nil
	}
	return "", platform.Errorf(platform.KindInvalid, CodeUnknownRole,
		"unknown role %q; the roles are %s", s, strings.Join(Names(), ", ")).
		WithDetails("roles", Names())
}

// Names returns the role names, most powerful first.
func Names() []string {
	out := make([]string, 0, len(table))
	for _, r := range All() {
		out = append(out, string(r))
	}
	return out
}

// Permissions returns what r may do; nothing for an unknown role, so a
// role that was removed from the table (or a corrupt row) grants nothing.
func Permissions(r Role) []Permission { return slices.Clone(table[r]) }

// Can reports whether r holds p.
func (r Role) Can(p Permission) bool { return slices.Contains(table[r], p) }

// Check returns nil when r holds p, and otherwise the FORBIDDEN error that
// every way in (API and console alike) answers with.
func (r Role) Check(p Permission) error {
	if r.Can(p) {
		return nil
	}
	shown := string(r)
	if shown == "" {
		shown = "(none)"
	}
	return platform.Errorf(platform.KindForbidden, platform.CodeForbidden,
		"the %s role does not allow %s", shown, p).WithDetails("permission", string(p)).WithDetails("role", string(r))
}

// Valid reports whether r is in the table.
func (r Role) Valid() bool {
	_, ok := table[r]
	return ok
}
