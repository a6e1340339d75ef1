package cli

import (
	"context"
	"fmt"
	"os/user"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/role"
)

// plane is the administrator plane as the support commands use it: over
// HTTP as the administrator signed in with `platformctl login`, or
// directly on the database as break-glass. Both run the same service
// methods, so the output and exit codes are the same.
type plane interface {
	SearchUsers(ctx context.Context, q admin.UserQuery) (*admin.UserPage, error)
	User(ctx context.Context, ref string) (*admin.UserDetail, error)
	AccountStatus(ctx context.Context, realm account.Realm, ref string) (*lifecycle.AccountStatus, error)
	InspectToken(ctx context.Context, token string) (*profile.TokenInfo, error)
	RevokeSessions(ctx context.Context, ref string, in admin.RevokeInput) (*admin.Revoked, error)
	Audit(ctx context.Context, q admin.AuditQuery) (*admin.AuditPage, error)
	Mail(ctx context.Context, f mail.Filter) ([]mail.Message, error)
	MailShow(ctx context.Context, id uuid.UUID) (*admin.MailDetail, error)
	MailRetry(ctx context.Context, reason string, id uuid.UUID) (*mail.Message, error)
	LiveOps(ctx context.Context) (*liveops.Snapshot, error)
	SetSeed(ctx context.Context, in admin.SeedInput) (*liveops.SeedChange, error)
	SetRole(ctx context.Context, ref role.AdminRef, in admin.RoleInput) (*role.Change, error)
	IssueToken(ctx context.Context, ref string, in admin.IssueRequest) (*profile.Issued, error)
	Suspend(ctx context.Context, realm account.Realm, ref, reason string, until time.Time) (*auth.Suspension, error)
	Unsuspend(ctx context.Context, realm account.Realm, ref, reason string) (lifted bool, _ error)
	DeleteUser(ctx context.Context, realm account.Realm, ref, reason string) (*lifecycle.Tombstone, error)
	ExportUser(ctx context.Context, realm account.Realm, ref string) (*lifecycle.Export, error)
	CreateAdmin(ctx context.Context, in admin.NewAdminInput) (*account.User, error)
	Publish(ctx context.Context, in admin.PublishInput) (*liveops.Head, error)
}

var (
	_ plane = (*remote)(nil)
	_ plane = local{}
)

// local is the plane on the database, every action recorded under actor.
type local struct {
	svc   *admin.Service
	app   *app.App
	actor string
}

func (l local) SearchUsers(ctx context.Context, q admin.UserQuery) (*admin.UserPage, error) {
	return l.svc.SearchUsers(ctx, q)
}

func (l local) User(ctx context.Context, ref string) (*admin.UserDetail, error) {
	id, err := uuid.Parse(ref)
	if err != nil {
		u, err := l.app.Accounts.Find(ctx, account.RealmPlayer, ref)
		if err != nil {
			return nil, err
		}
		id = u.ID
	}
	return l.svc.User(ctx, l.actor, id)
}

func (l local) AccountStatus(ctx context.Context, realm account.Realm, ref string) (*lifecycle.AccountStatus, error) {
	return l.app.Lifecycle.Show(ctx, realm, ref)
}

func (l local) InspectToken(ctx context.Context, token string) (*profile.TokenInfo, error) {
	return l.app.Profile.Inspect(ctx, l.actor, token)
}

func (l local) RevokeSessions(ctx context.Context, ref string, in admin.RevokeInput) (*admin.Revoked, error) {
	return l.svc.RevokeSessions(ctx, l.actor, ref, in)
}

func (l local) Audit(ctx context.Context, q admin.AuditQuery) (*admin.AuditPage, error) {
	return l.svc.Audit(ctx, q)
}

func (l local) Mail(ctx context.Context, f mail.Filter) ([]mail.Message, error) {
	return l.svc.Mail(ctx, l.actor, f)
}

func (l local) MailShow(ctx context.Context, id uuid.UUID) (*admin.MailDetail, error) {
	return l.svc.MailShow(ctx, l.actor, id)
}

func (l local) MailRetry(ctx context.Context, reason string, id uuid.UUID) (*mail.Message, error) {
	return l.svc.MailRetry(ctx, l.actor, reason, id)
}

func (l local) LiveOps(ctx context.Context) (*liveops.Snapshot, error) { return l.svc.LiveOps(ctx) }

func (l local) SetSeed(ctx context.Context, in admin.SeedInput) (*liveops.SeedChange, error) {
	return l.svc.SetSeed(ctx, l.actor, in)
}

func (l local) IssueToken(ctx context.Context, ref string, in admin.IssueRequest) (*profile.Issued, error) {
	issued, err := l.svc.IssueToken(ctx, in.Input(l.actor, ref))
	if err != nil {
		return nil, explainCallback(err, l.app.Config)
	}
	return issued, nil
}

func (l local) SetRole(ctx context.Context, ref role.AdminRef, in admin.RoleInput) (*role.Change, error) {
	return l.svc.SetRole(ctx, l.actor, ref, in)
}

func (l local) Suspend(ctx context.Context, realm account.Realm, ref, reason string, until time.Time) (*auth.Suspension, error) {
	return l.app.Lifecycle.Suspend(ctx, l.actor, realm, ref, reason, until)
}

func (l local) Unsuspend(ctx context.Context, realm account.Realm, ref, reason string) (bool, error) {
	return l.app.Lifecycle.Unsuspend(ctx, l.actor, realm, ref, reason)
}

func (l local) DeleteUser(ctx context.Context, realm account.Realm, ref, reason string) (*lifecycle.Tombstone, error) {
	return l.app.Lifecycle.DeleteBySupport(ctx, l.actor, realm, ref, reason)
}

func (l local) ExportUser(ctx context.Context, realm account.Realm, ref string) (*lifecycle.Export, error) {
	return l.app.Lifecycle.ExportBySupport(ctx, l.actor, realm, ref)
}

func (l local) CreateAdmin(ctx context.Context, in admin.NewAdminInput) (*account.User, error) {
	return l.svc.CreateAdmin(ctx, l.actor, in)
}

func (l local) Publish(ctx context.Context, in admin.PublishInput) (*liveops.Head, error) {
	return l.svc.Publish(ctx, l.actor, in)
}

// planeRunE is the preamble of the support commands that work over
// HTTP: with a saved session they call the server as that administrator;
// without one they open the database (break-glass), say so on stderr and
// record every action as break-glass:<os user>.
func planeRunE(e *env, run func(cmd *cobra.Command, p plane, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("output"); f != nil {
			if err := checkOutput(f.Value.String()); err != nil {
				return err
			}
		}
		s, err := loadSession(e)
		if err != nil {
			return err
		}
		if s != nil {
			return run(cmd, newRemote(s), args)
		}
		a, err := openSupportApp(cmd, e)
		if err != nil {
			return err
		}
		defer a.Close()
		actor := supportActor(e)
		if err := run(cmd, local{svc: a.AdminPlane, app: a, actor: actor}, args); err != nil {
			return err // one line: the error alone
		}
		fmt.Fprintf(e.stderr, "warning: not signed in (platformctl login --server URL); worked on the database directly, audited as %s\n", actor)
		return nil
	}
}

// osUser is the operating-system user at the keyboard.
func osUser(e *env) string {
	name := e.getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" || !actorPattern.MatchString(name) {
		name = "unknown"
	}
	return name
}

// errAdminRealmRemote: administrators' own sessions are managed on the
// database only; the API's support routes serve players.
var errAdminRealmRemote = withExit(ExitUsage, fmt.Errorf("--realm admin works on the database only (platformctl logout, then a database URL)"))

// onDatabase returns p as the database plane, which alone serves
// administrators' own accounts.
func onDatabase(p plane) (local, error) {
	l, ok := p.(local)
	if !ok {
		return local{}, errAdminRealmRemote
	}
	return l, nil
}

// listSessions returns the user and live sessions of ref: a player's
// through the plane, an administrator's on the database.
func listSessions(ctx context.Context, p plane, realm account.Realm, ref string) (*account.User, []admin.SessionView, error) {
	if realm == account.RealmAdmin {
		l, err := onDatabase(p)
		if err != nil {
			return nil, nil, err
		}
		u, list, err := l.app.Auth.SupportListSessions(ctx, l.actor, realm, ref)
		if err != nil {
			return nil, nil, err
		}
		return u, admin.SessionViews(list), nil
	}
	d, err := p.User(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	return d.User, d.Sessions, nil
}

// revokeSessions ends sessions of ref: a player's through the plane, an
// administrator's on the database.
func revokeSessions(ctx context.Context, p plane, realm account.Realm, ref string, in admin.RevokeInput) (*admin.Revoked, error) {
	if realm == account.RealmAdmin {
		l, err := onDatabase(p)
		if err != nil {
			return nil, err
		}
		u, n, err := l.app.Auth.SupportRevokeSessions(ctx, l.actor, realm, ref, in.SessionID, in.Reason)
		if err != nil {
			return nil, err
		}
		return &admin.Revoked{UserID: u.ID, Email: u.Email, Revoked: n}, nil
	}
	return p.RevokeSessions(ctx, ref, in)
}

// auditEntries reads up to limit entries, newest first, a page at a time.
func auditEntries(ctx context.Context, p plane, q admin.AuditQuery, limit int) ([]audit.Entry, error) {
	out := []audit.Entry{}
	for len(out) < limit {
		q.Limit = min(limit-len(out), admin.MaxPageSize)
		page, err := p.Audit(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Entries...)
		if page.NextCursor == nil {
			break
		}
		q.Cursor = *page.NextCursor
	}
	return out, nil
}
