package profile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Token statuses as support staff see them.
const (
	TokenPending    = "pending"
	TokenUsed       = "used"
	TokenExpired    = "expired"
	TokenSuperseded = "superseded"
)

// TokenInfo describes a token without consuming it.
type TokenInfo struct {
	Type         Type       `json:"type"`
	Step         Step       `json:"step"`
	Status       string     `json:"status"`
	UserID       uuid.UUID  `json:"userId"`
	Email        string     `json:"email"`
	Nickname     string     `json:"nickname"`
	ChangeID     uuid.UUID  `json:"changeId"`
	ChangeStatus Status     `json:"changeStatus"`
	RequestedBy  string     `json:"requestedBy"`
	CreatedAt    time.Time  `json:"createdAt"`
	ExpiresAt    time.Time  `json:"expiresAt"`
	UsedAt       *time.Time `json:"usedAt"`
}

// Inspect tells support staff what a token is for and where it stands.
// It never consumes the token, and it is audited (with a prefix of the
// token's hash, never the token).
func (s *Service) Inspect(ctx context.Context, actor, token string) (*TokenInfo, error) {
	if !wellFormedToken(token) {
		return nil, platform.Invalid("token", "must be 64 lower-case hex characters")
	}
	hash := s.hashToken(token)
	tok, c, err := s.store.Token(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("inspect token: %w", err)
	}
	entry := audit.Entry{Actor: actor, Action: "token.inspect", Details: map[string]string{"tokenHash": hash[:16], "found": fmt.Sprint(tok != nil)}}
	if tok != nil {
		entry.Target = tok.UserID.String()
		entry.Details["changeId"] = tok.ChangeID.String()
	}
	if err := s.audit.Record(ctx, entry); err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, platform.Errorf(platform.KindNotFound, platform.CodeNotFound, "no such token (it may belong to another installation or secret)")
	}
	info := &TokenInfo{
		Type: tok.Type, Step: tok.Step, UserID: tok.UserID, ChangeID: tok.ChangeID,
		ChangeStatus: c.Status, RequestedBy: c.RequestedBy,
		CreatedAt: tok.CreatedAt, ExpiresAt: tok.ExpiresAt, UsedAt: tok.ConsumedAt,
	}
	switch {
	case tok.ConsumedAt != nil:
		info.Status = TokenUsed
	case tok.SupersededAt != nil:
		info.Status = TokenSuperseded
	case !tok.ExpiresAt.After(s.clock()):
		info.Status = TokenExpired
	default:
		info.Status = TokenPending
	}
	if u, err := s.accounts.ByID(ctx, tok.UserID); err == nil {
		info.Email, info.Nickname = u.Email, u.Nickname
	}
	return info, nil
}

// IssueInput is a change support staff start on a player's behalf.
type IssueInput struct {
	// Actor and Reason go to the audit log.
	Actor  string
	Reason string
	// User is the player's id or email.
	User string
	Type Type
	// Name and Nickname (profile) default to the current values.
	Name     string
	Nickname string
	// NewEmail is the target of an email change.
	NewEmail string
	// SkipOldEmail starts an email change at the new-address step, for an
	// owner who lost the old inbox and proved who they are some other way.
	SkipOldEmail bool
	// NewPassword is the new password of a password change.
	NewPassword string
	// CallbackURL is the client page the link opens.
	CallbackURL string
	// Send mails the link as the player's own request would; otherwise
	// only the caller gets the token.
	Send bool
}

// Issued is the token of an issued change.
type Issued struct {
	Token     string     `json:"token"`
	Link      string     `json:"link"`
	Type      Type       `json:"type"`
	Step      Step       `json:"step"`
	UserID    uuid.UUID  `json:"userId"`
	Recipient string     `json:"recipient"`
	ChangeID  uuid.UUID  `json:"changeId"`
	ExpiresAt time.Time  `json:"expiresAt"`
	Sent      bool       `json:"sent"`
	MessageID *uuid.UUID `json:"messageId"`
}

// Issue creates a pending change for a player, superseding their pending
// change of that type, under the same rules as the player's own request
// except the rate limits and the current password. The action and its
// reason are audited in the same transaction.
func (s *Service) Issue(ctx context.Context, in IssueInput) (*Issued, error) {
	if err := checkIssueInput(in); err != nil {
		return nil, err
	}
	callback, err := s.checkCallback(in.CallbackURL)
	if err != nil {
		return nil, err
	}
	u, err := s.accounts.Find(ctx, account.RealmPlayer, in.User)
	if err != nil {
		return nil, err
	}
	p := startParams{
		userID: u.ID,
		send:   in.Send,
		audit: &audit.Entry{Actor: in.Actor, Action: "token.issue", Reason: in.Reason,
			Details: map[string]string{"type": string(in.Type), "sent": fmt.Sprint(in.Send)}},
	}
	p.change = Change{Type: in.Type, CallbackURL: callback, RequestedBy: in.Actor}
	if err := s.issuedChange(ctx, in, u, &p); err != nil {
		return nil, err
	}
	res, err := s.start(ctx, p)
	if err != nil {
		return nil, err
	}
	c := p.change
	return &Issued{
		Token: res.token, Link: res.link, Type: c.Type, Step: c.Step, UserID: u.ID, Recipient: res.recipient,
		ChangeID: res.change.ID, ExpiresAt: res.expiresAt, Sent: in.Send, MessageID: res.messageID,
	}, nil
}

// checkIssueInput names every missing or unknown field of in at once.
func checkIssueInput(in IssueInput) error {
	fields := platform.FieldErrors{}
	if in.Actor == "" {
		fields.Add("actor", "is required")
	}
	if in.User == "" {
		fields.Add("user", "is required")
	}
	if !slices.Contains(Types, in.Type) {
		fields.Add("type", "must be profile, email or password")
	}
	if in.CallbackURL == "" {
		fields.Add("callbackURL", "is required")
	}
	return fields.Err()
}

// issuedChange fills in p's change for the type in asks for, with the
// check the transaction makes before it starts, under the rules of the
// player's own request.
func (s *Service) issuedChange(ctx context.Context, in IssueInput, u *account.User, p *startParams) error {
	fields := platform.FieldErrors{}
	c := &p.change
	switch in.Type {
	case TypeProfile:
		c.Step = StepConfirm
		c.NewName, c.NewNickname = account.NormalizeName(in.Name), account.NormalizeNickname(in.Nickname)
		if c.NewName == "" {
			c.NewName = u.Name
		}
		if c.NewNickname == "" {
			c.NewNickname = u.Nickname
		}
		addFieldProblems(fields, account.ValidateName(c.NewName))
		addFieldProblems(fields, account.ValidateNickname(c.NewNickname))
		p.check = s.nicknameFree(c.NewNickname)
	case TypeEmail:
		c.Step, c.NewEmail = StepOldEmail, account.NormalizeEmail(in.NewEmail)
		if in.SkipOldEmail {
			c.Step = StepNewEmail
			p.audit.Details["skipOldEmail"] = "true"
		}
		switch {
		case c.NewEmail == "":
			fields.Add("newEmail", "is required")
		case !account.ValidEmail(c.NewEmail):
			fields.Add("newEmail", "Invalid email address")
		case c.NewEmail == u.Email:
			fields.Add("newEmail", "is already the account's email")
		}
		p.check = s.emailFree(c.NewEmail)
	case TypePassword:
		c.Step = StepConfirm
		if prob := newPasswordProblem(in.NewPassword); prob != "" {
			fields.Add("newPassword", prob)
		} else {
			hash, err := s.accounts.HashPassword(ctx, in.NewPassword)
			if err != nil {
				return err
			}
			c.NewPasswordHash = hash
		}
	}
	return fields.Err()
}
