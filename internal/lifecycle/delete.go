package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/role"
)

// Audit actions of this package.
const (
	ActionDelete    = "account.delete"
	ActionSuspend   = "account.suspend"
	ActionUnsuspend = "account.unsuspend"
	ActionExport    = "account.export"
)

// Reasons a deletion records on its tombstone.
const (
	ReasonSelfService = "self-service"
	ReasonGuest       = "guest-self-service"
)

// DeleteRequest is the body of better-auth's POST /delete-user.
type DeleteRequest struct {
	Password    string `json:"password,omitempty"`
	Token       string `json:"token,omitempty"`
	CallbackURL string `json:"callbackURL,omitempty"`
}

// DeleteResult answers a self-service deletion: "User deleted" or
// "Verification email sent", as better-auth words them.
type DeleteResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// Messages of DeleteResult.
const (
	MessageDeleted  = "User deleted"
	MessageMailSent = "Verification email sent"
)

// DeleteSelf is better-auth's POST /delete-user for the principal: the
// password, or a session opened within FreshAge, proves it is the owner;
// a token from a mailed link deletes at once; otherwise, with mail
// configured, a link is mailed and nothing is deleted yet.
func (s *Service) DeleteSelf(ctx context.Context, p *auth.Principal, in DeleteRequest) (*DeleteResult, error) {
	if p.Realm != account.RealmPlayer {
		return nil, errAdminSelf
	}
	if err := s.auth.Origins().CheckCallback(in.CallbackURL, auth.CodeInvalidCallbackURL); err != nil {
		return nil, err
	}
	if in.Password != "" {
		if err := s.auth.Accounts().VerifyPassword(ctx, p.User, in.Password); err != nil {
			if errors.Is(err, account.ErrInvalidCredentials) {
				return nil, errInvalidPassword
			}
			return nil, err
		}
	}
	if in.Token != "" {
		if err := s.ConfirmDeletion(ctx, p, in.Token); err != nil {
			return nil, err
		}
		return &DeleteResult{Success: true, Message: MessageDeleted}, nil
	}
	if in.Password == "" {
		if err := s.auth.RequireFresh(p); err != nil {
			return nil, err
		}
	}
	if s.opts.ConfirmByMail {
		if err := s.mailDeletionLink(ctx, p.User, in.CallbackURL); err != nil {
			return nil, err
		}
		return &DeleteResult{Success: true, Message: MessageMailSent}, nil
	}
	if err := s.deleteUser(ctx, p.User.ID, p.User.ID.String(), ReasonSelfService, false, nil); err != nil {
		return nil, err
	}
	return &DeleteResult{Success: true, Message: MessageDeleted}, nil
}

// DeleteGuest is the anonymous plugin's POST /delete-anonymous-user: a
// guest deletes itself at once. It has no password to prove and no
// address a link could reach, and its session is its only way in.
func (s *Service) DeleteGuest(ctx context.Context, p *auth.Principal) error {
	if !p.User.IsAnonymous {
		return errNotAnonymous
	}
	return s.deleteUser(ctx, p.User.ID, p.User.ID.String(), ReasonGuest, false, nil)
}

// mailDeletionLink stores a single-use token and enqueues its link in one
// transaction: the token exists if and only if its mail will go out.
func (s *Service) mailDeletionLink(ctx context.Context, u *account.User, callbackURL string) error {
	token, hash, err := auth.NewToken()
	if err != nil {
		return err
	}
	now := s.clock()
	t := &DeletionToken{TokenHash: hash, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(s.opts.TokenTTL)}
	q := url.Values{"token": {token}}
	if callbackURL != "" {
		q.Set("callbackURL", callbackURL)
	}
	link := s.opts.BaseURL + auth.MountPath(u.Realm) + "/delete-user/callback?" + q.Encode()
	msg, err := s.mailer.Compose(mail.TemplateDeleteAccount, u.Email,
		mail.Data{Name: u.Name, Email: u.Email, Link: link, ExpiresAt: t.ExpiresAt}, t.ExpiresAt)
	if err != nil {
		return fmt.Errorf("compose deletion mail: %w", err)
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.InsertDeletionToken(ctx, t); err != nil {
			return err
		}
		return tx.EnqueueMail(ctx, msg)
	})
	if err != nil {
		return fmt.Errorf("mail deletion link: %w", err)
	}
	s.mailer.Wake()
	return nil
}

// ConfirmDeletion deletes the principal's account with a mailed token.
// An unknown, used or expired token, or one mailed to another account, is
// 404 INVALID_TOKEN and deletes nothing (another account's token stays
// usable by its owner).
func (s *Service) ConfirmDeletion(ctx context.Context, p *auth.Principal, token string) error {
	if token == "" || len(token) > 256 {
		return errInvalidToken
	}
	hash := auth.HashToken(token)
	return s.deleteUser(ctx, p.User.ID, p.User.ID.String(), ReasonSelfService, false, func(ctx context.Context, tx Tx) error {
		t, err := tx.TakeDeletionToken(ctx, hash)
		if errors.Is(err, ErrTokenNotFound) {
			return errInvalidToken
		}
		if err != nil {
			return err
		}
		if t.UserID != p.User.ID || !s.clock().Before(t.ExpiresAt) {
			return errInvalidToken // the rollback puts another's token back
		}
		return nil
	})
}

// DeleteBySupport deletes an account from the admin tools. Administrators
// can be deleted only this way, and never the last one with the admin
// role.
func (s *Service) DeleteBySupport(ctx context.Context, actor string, realm account.Realm, userRef, reason string) (*Tombstone, error) {
	reason = strings.TrimSpace(reason)
	if err := checkReason(reason); err != nil {
		return nil, err
	}
	u, err := s.auth.Accounts().Find(ctx, realm, userRef)
	if err != nil {
		return nil, err
	}
	if err := s.deleteUser(ctx, u.ID, actor, reason, true, nil); err != nil {
		return nil, err
	}
	return s.store.Tombstone(ctx, u.ID)
}

// Tombstone answers "was this account deleted": the tombstone of id, or
// ErrNotFound.
func (s *Service) Tombstone(ctx context.Context, id uuid.UUID) (*Tombstone, error) {
	return s.store.Tombstone(ctx, id)
}

// deleteUser is the one deletion transaction. check, when set, runs first
// inside it (taking a mailed token). Everything commits together; then
// every replica hears that the sessions ended and the lobby changed, and
// the last mail goes out.
func (s *Service) deleteUser(ctx context.Context, id uuid.UUID, actor, reason string, bySupport bool, check func(context.Context, Tx) error) error {
	var after []func(context.Context)
	err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		after = nil
		if check != nil {
			if err := check(ctx, tx); err != nil {
				return err
			}
		}
		u, err := tx.LockUser(ctx, id)
		if errors.Is(err, account.ErrNotFound) {
			return errGone
		}
		if err != nil {
			return err
		}
		if err := s.mayDelete(ctx, tx, u, bySupport); err != nil {
			return err
		}
		after, err = s.deleteTx(ctx, tx, u, actor, reason)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete account: %w", err)
	}
	for _, f := range after {
		f(ctx)
	}
	s.mailer.Wake()
	return nil
}

// mayDelete keeps administrators to the admin tools and keeps the last
// administrator with the admin role.
func (s *Service) mayDelete(ctx context.Context, tx Tx, u *account.User, bySupport bool) error {
	if u.Realm != account.RealmAdmin {
		return nil
	}
	if !bySupport {
		return errAdminSelf
	}
	if r := role.Role(u.Role); r != role.Admin && r != "" {
		return nil
	}
	n, err := tx.CountAdmins(ctx, string(role.Admin))
	if err != nil {
		return err
	}
	if role.Default == role.Admin {
		m, err := tx.CountAdmins(ctx, "")
		if err != nil {
			return err
		}
		n += m
	}
	if n <= 1 {
		return errLastOwner
	}
	return nil
}

// deleteTx runs the steps of a deletion on the locked user and returns
// what to do once they committed.
func (s *Service) deleteTx(ctx context.Context, tx Tx, u *account.User, actor, reason string) ([]func(context.Context), error) {
	now := s.clock()
	ended, err := s.auth.EndUserSessionsTx(ctx, tx, u.ID, auth.EndedAccountDeleted)
	if err != nil {
		return nil, err
	}
	left, err := s.players.LeaveForGoodTx(ctx, tx, u.ID)
	if err != nil {
		return nil, err
	}
	personal := []string{u.Email, u.Name, u.Nickname}
	keys := append(auth.LimitKeys(u.Realm, u.Email), profile.LimitKeys(u.ID, u.Email)...)
	if err := tx.EraseUser(ctx, Erasure{User: u, Personal: personal, LimitKeys: keys}); err != nil {
		return nil, err
	}
	if err := tx.InsertTombstone(ctx, &Tombstone{ID: u.ID, Realm: u.Realm, DeletedAt: now, Reason: reason, Actor: actor}); err != nil {
		return nil, err
	}
	if err := tx.Quarantine(ctx, s.identifierKeys(u.Realm, u.Email, u.Nickname), now.Add(s.opts.Quarantine)); err != nil {
		return nil, err
	}
	entry := &audit.Entry{At: now, Actor: actor, Action: ActionDelete, Target: u.ID.String(), Reason: reason,
		Details: map[string]string{"realm": string(u.Realm)}}
	if err := tx.InsertAudit(ctx, entry); err != nil {
		return nil, err
	}
	if u.IsAnonymous {
		return []func(context.Context){ended, left}, nil // a guest's address is a placeholder
	}
	msg, err := s.mailer.Compose(mail.TemplateAccountDeleted, u.Email, mail.Data{Name: u.Name, Email: u.Email}, now.Add(s.opts.TokenTTL))
	if err != nil {
		return nil, fmt.Errorf("compose deletion notice: %w", err)
	}
	if err := tx.EnqueueMail(ctx, msg); err != nil {
		return nil, err
	}
	return []func(context.Context){ended, left}, nil
}

// Quarantined reports whether the email or nickname of a deleted account
// is still reserved in realm.
func (s *Service) Quarantined(ctx context.Context, realm account.Realm, email, nickname string) (bool, error) {
	return s.store.Quarantined(ctx, s.identifierKeys(realm, email, nickname), s.clock())
}
