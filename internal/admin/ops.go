package admin

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/role"
)

// AuditQuery filters the audit trail; zero fields match everything.
type AuditQuery struct {
	// User is an account's id or email (players first, then administrators).
	User   string
	Action string
	Actor  string
	Since  time.Time
	Cursor string
	Limit  int
}

// AuditPage is one page of the audit trail, newest first.
type AuditPage struct {
	Entries    []audit.Entry `json:"entries"`
	NextCursor *string       `json:"nextCursor"`
}

type auditCursor struct {
	At time.Time `json:"t"`
	ID int64     `json:"i"`
}

// Audit returns a page of the audit trail, newest first.
func (s *Service) Audit(ctx context.Context, q AuditQuery) (*AuditPage, error) {
	limit, err := pageSize(q.Limit)
	if err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"user": q.User, "action": q.Action, "actor": q.Actor} {
		if err := checkText(field, v); err != nil {
			return nil, err
		}
	}
	f := audit.Filter{Action: q.Action, Actor: q.Actor, Since: q.Since, Limit: limit + 1}
	if f.Target, err = s.auditTarget(ctx, q.User); err != nil {
		return nil, err
	}
	if q.Cursor != "" {
		var c auditCursor
		if err := decodeCursor(q.Cursor, &c); err != nil || c.ID <= 0 {
			return nil, errBadCursor
		}
		f.Before = &audit.Position{At: c.At, ID: c.ID}
	}
	entries, err := s.d.Audit.List(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &AuditPage{Entries: entries}
	if len(entries) > limit {
		page.Entries = entries[:limit]
		last := page.Entries[limit-1]
		next := encodeCursor(auditCursor{At: last.At, ID: last.ID})
		page.NextCursor = &next
	}
	if page.Entries == nil {
		page.Entries = []audit.Entry{}
	}
	return page, nil
}

// auditTarget resolves a user filter to the target recorded for the
// account: its id. An email is looked up among players, then administrators.
func (s *Service) auditTarget(ctx context.Context, user string) (string, error) {
	if user == "" {
		return "", nil
	}
	if id, err := uuid.Parse(user); err == nil {
		return id.String(), nil
	}
	var lastErr error
	for _, realm := range []account.Realm{account.RealmPlayer, account.RealmAdmin} {
		u, err := s.d.Auth.Accounts().Find(ctx, realm, user)
		if err == nil {
			return u.ID.String(), nil
		}
		lastErr = err
	}
	return "", lastErr
}

// Mail lists outbox messages, newest first (audited by the outbox).
func (s *Service) Mail(ctx context.Context, actor string, f mail.Filter) ([]mail.Message, error) {
	msgs, err := s.d.Outbox.List(ctx, actor, f)
	if msgs == nil && err == nil {
		msgs = []mail.Message{}
	}
	return msgs, err
}

// MailDetail is one message with every delivery attempt.
type MailDetail struct {
	*mail.Message
	Attempts []mail.Attempt `json:"attemptLog"`
}

// MailShow returns one message with its attempts (audited by the outbox).
func (s *Service) MailShow(ctx context.Context, actor string, id uuid.UUID) (*MailDetail, error) {
	m, atts, err := s.d.Outbox.Get(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	if atts == nil {
		atts = []mail.Attempt{}
	}
	return &MailDetail{Message: m, Attempts: atts}, nil
}

// MailRetry makes a failed message due again (audited by the outbox).
func (s *Service) MailRetry(ctx context.Context, actor, reason string, id uuid.UUID) (*mail.Message, error) {
	return s.d.Outbox.Retry(ctx, actor, reason, id)
}

// IssueRequest is a change support staff start for a player, as the API
// takes it.
type IssueRequest struct {
	Type         string `json:"type"`
	Reason       string `json:"reason,omitempty"`
	Name         string `json:"name,omitempty"`
	Nickname     string `json:"nickname,omitempty"`
	NewEmail     string `json:"newEmail,omitempty"`
	SkipOldEmail bool   `json:"skipOldEmail,omitempty"`
	NewPassword  string `json:"newPassword,omitempty"`
	CallbackURL  string `json:"callbackURL"`
	Send         bool   `json:"send,omitempty"`
}

// Input is the request for the player named by user (an id or email).
func (in IssueRequest) Input(actor, user string) profile.IssueInput {
	return profile.IssueInput{Actor: actor, Reason: in.Reason, User: user, Type: profile.Type(in.Type),
		Name: in.Name, Nickname: in.Nickname, NewEmail: in.NewEmail, SkipOldEmail: in.SkipOldEmail,
		NewPassword: in.NewPassword, CallbackURL: in.CallbackURL, Send: in.Send}
}

// RequestOf is the request behind an issue input.
func RequestOf(in profile.IssueInput) IssueRequest {
	return IssueRequest{Type: string(in.Type), Reason: in.Reason, Name: in.Name, Nickname: in.Nickname,
		NewEmail: in.NewEmail, SkipOldEmail: in.SkipOldEmail, NewPassword: in.NewPassword, CallbackURL: in.CallbackURL, Send: in.Send}
}

// IssueToken starts a change on a player's behalf (audited by profile).
func (s *Service) IssueToken(ctx context.Context, in profile.IssueInput) (*profile.Issued, error) {
	return s.d.Profile.Issue(ctx, in)
}

// LiveOps returns the newest live-ops version as of now.
func (s *Service) LiveOps(ctx context.Context) (*liveops.Snapshot, error) {
	return s.d.LiveOps.Snapshot(ctx)
}

// SeedInput is a map seed change.
type SeedInput struct {
	Size   string `json:"size"`
	Seed   int64  `json:"seed"`
	Reason string `json:"reason"`
}

// SetSeed publishes a live-ops version with one map seed changed.
func (s *Service) SetSeed(ctx context.Context, actor string, in SeedInput) (*liveops.SeedChange, error) {
	if in.Seed <= 0 {
		return nil, platform.Invalid("seed", "must be a positive integer")
	}
	return s.d.LiveOps.SetSeed(ctx, actor, in.Size, in.Seed, in.Reason)
}

// PublishInput is a whole live-ops configuration to publish as the next
// version, and why.
type PublishInput struct {
	Config liveops.Config `json:"config"`
	Reason string         `json:"reason"`
}

// Publish publishes in.Config as the next live-ops version (validated
// against the queue presets and audited by liveops). A configuration
// equal to the newest one publishes nothing and returns the newest head.
func (s *Service) Publish(ctx context.Context, actor string, in PublishInput) (*liveops.Head, error) {
	return s.d.LiveOps.Publish(ctx, actor, in.Config, s.d.Queues, in.Reason)
}

// NewAdminInput is an administrator account to create.
type NewAdminInput struct {
	Email    string `json:"email"`
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password"`
}

// CreateAdmin creates an administrator account (checked by account,
// audited by auth); an empty role is the default one.
func (s *Service) CreateAdmin(ctx context.Context, actor string, in NewAdminInput) (*account.User, error) {
	return s.d.Auth.CreateAdmin(ctx, actor, account.NewUser{Email: in.Email, Name: in.Name, Role: in.Role, Password: in.Password})
}

// MaxAdmins bounds the administrator list: a deployment has a handful.
const MaxAdmins = 1000

// Admins lists the administrators by email.
func (s *Service) Admins(ctx context.Context) ([]role.AdminAccount, error) {
	list, err := s.d.Store.ListAdmins(ctx, MaxAdmins)
	if list == nil && err == nil {
		list = []role.AdminAccount{}
	}
	return list, err
}

// RoleInput changes an administrator's role.
type RoleInput struct {
	Role   string `json:"role"`
	Reason string `json:"reason"`
}

// SetRole gives an administrator another role (guarded and audited by role.Admins).
func (s *Service) SetRole(ctx context.Context, actor string, ref role.AdminRef, in RoleInput) (*role.Change, error) {
	return s.d.Admins.SetRole(ctx, actor, ref, in.Role, in.Reason)
}
