package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/social"
)

// linkRefusal is a refused sign-in or link: code is the callback's
// ?error= code, apiErr the JSON answer of the ID-token branch.
type linkRefusal struct {
	code   string
	apiErr *platform.Error
}

func (e *linkRefusal) Error() string { return e.code }

func refuse(code string, kind platform.Kind, apiCode, msg string) *linkRefusal {
	return &linkRefusal{code: code, apiErr: platform.Errorf(kind, apiCode, "%s", msg)}
}

var (
	errAccountNotLinked = refuse(ErrAccountNotLinked, platform.KindUnauthenticated, CodeOAuthLinkError,
		"Account not linked: sign in with your existing method, then link this provider")
	errEmailNotFound    = refuse(ErrEmailNotFound, platform.KindUnauthenticated, CodeUserEmailNotFound, "The provider gave no email")
	errLinkedElsewhere  = refuse(ErrLinkedToAnotherUser, platform.KindConflict, CodeSocialAlreadyLinked, "This account is already linked to another user")
	errEmailNotVerified = refuse(ErrEmailNotVerified, platform.KindForbidden, CodeLinkingNotAllowed, "The provider has not verified this email")
	errEmailMismatch    = refuse(ErrEmailDoesNotMatch, platform.KindUnauthenticated, CodeLinkingDifferentEmails, "The provider's email differs from the account's")
	errLinkSessionGone  = refuse(ErrUnableToLinkAccount, platform.KindUnauthenticated, CodeLinkingNotAllowed, "The session that started the link has ended")
)

func resolveErrorCode(err error) (code string, internal error) {
	var r *linkRefusal
	if errors.As(err, &r) {
		return r.code, nil
	}
	return ErrUnableToCreateUser, err
}

// resolved is the user a provider's profile stands for.
type resolved struct {
	user  *account.User
	isNew bool
}

// resolve finds or makes the user behind prof, in one transaction:
//   - a known (issuer, subject) is its user (a link must be to that user);
//   - a link adds the identity when the provider verified the same email;
//   - a guest is upgraded in place, keeping its player state, when the
//     email is new to the realm;
//   - an existing account with that email is linked only when both the
//     provider and the account have verified it, else account_not_linked;
//   - anyone else gets a new account.
func (s *Social) resolve(ctx context.Context, providerID string, prof *social.Profile, st StateData) (*resolved, error) {
	if st.LinkUserID != uuid.Nil {
		live, err := s.linkSessionLive(ctx, st)
		if err != nil || !live {
			return nil, errors.Join(errLinkSessionGone, err)
		}
	}
	var out *resolved
	var notice *mail.Outgoing
	err := s.store.InSocialTx(ctx, func(ctx context.Context, tx SocialTx) error {
		var err error
		out, notice, err = s.resolveIn(ctx, tx, providerID, prof, st)
		if err != nil || notice == nil {
			return err
		}
		return tx.EnqueueMail(ctx, notice)
	})
	if err != nil {
		return nil, err
	}
	if notice != nil {
		s.auth.mailer.Wake()
	}
	return out, nil
}

func (s *Social) linkSessionLive(ctx context.Context, st StateData) (bool, error) {
	sess, _, err := s.auth.store.SessionByTokenHash(ctx, st.LinkSession)
	if errors.Is(err, ErrSessionNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up linking session: %w", err)
	}
	return sess.UserID == st.LinkUserID && s.auth.clock().Before(sess.ExpiresAt), nil
}

func (s *Social) resolveIn(ctx context.Context, tx SocialTx, providerID string, prof *social.Profile, st StateData) (*resolved, *mail.Outgoing, error) {
	if prof.Subject == "" || prof.Issuer == "" {
		return nil, nil, refuse(ErrUnableToGetUserInfo, platform.KindUnauthenticated, CodeFailedToGetUserInfo, "The provider gave no subject")
	}
	prof.Email = account.NormalizeEmail(prof.Email)
	known, err := tx.IdentityBySubject(ctx, prof.Issuer, prof.Subject)
	switch {
	case err == nil:
		if st.LinkUserID != uuid.Nil && known.UserID != st.LinkUserID {
			return nil, nil, errLinkedElsewhere
		}
		u, err := tx.UserByID(ctx, known.UserID)
		return &resolved{user: u}, nil, err
	case !errors.Is(err, ErrIdentityNotFound):
		return nil, nil, err
	}
	if st.LinkUserID != uuid.Nil {
		return s.linkTo(ctx, tx, st.LinkUserID, providerID, prof)
	}
	if prof.Email == "" {
		return nil, nil, errEmailNotFound
	}
	existing, err := tx.UserByEmail(ctx, account.RealmPlayer, prof.Email)
	switch {
	case err == nil:
		if !prof.EmailVerified || !existing.EmailVerified {
			return nil, nil, errAccountNotLinked
		}
		return s.addIdentity(ctx, tx, existing, providerID, prof, false)
	case !errors.Is(err, account.ErrNotFound):
		return nil, nil, err
	}
	if st.GuestID != uuid.Nil {
		if guest, err := tx.UserByID(ctx, st.GuestID); err == nil && guest.IsAnonymous {
			return s.upgradeGuest(ctx, tx, guest, providerID, prof)
		}
	}
	u := s.newUser(prof)
	if err := tx.InsertUser(ctx, u); err != nil {
		return nil, nil, err
	}
	res, _, err := s.addIdentity(ctx, tx, u, providerID, prof, true)
	return res, nil, err
}

// linkTo adds the identity to the signed-in user of /link-social: only a
// provider-verified email equal to the account's may be linked.
func (s *Social) linkTo(ctx context.Context, tx SocialTx, userID uuid.UUID, providerID string, prof *social.Profile) (*resolved, *mail.Outgoing, error) {
	u, err := tx.UserByID(ctx, userID)
	if err != nil {
		return nil, nil, err
	}
	if u.IsAnonymous {
		if prof.Email == "" {
			return nil, nil, errEmailNotFound
		}
		if _, err := tx.UserByEmail(ctx, account.RealmPlayer, prof.Email); err == nil {
			return nil, nil, errAccountNotLinked
		}
		return s.upgradeGuest(ctx, tx, u, providerID, prof)
	}
	if !prof.EmailVerified {
		return nil, nil, errEmailNotVerified
	}
	if prof.Email != u.Email {
		return nil, nil, errEmailMismatch
	}
	return s.addIdentity(ctx, tx, u, providerID, prof, false)
}

// upgradeGuest turns the guest into a full account in place: the same
// user id, so every deck, friend, lobby and event stays theirs.
func (s *Social) upgradeGuest(ctx context.Context, tx SocialTx, guest *account.User, providerID string, prof *social.Profile) (*resolved, *mail.Outgoing, error) {
	guest.IsAnonymous = false
	guest.Email, guest.EmailVerified = prof.Email, prof.EmailVerified
	if name := account.NormalizeName(prof.Name); name != "" && account.ValidateName(name) == nil {
		guest.Name = name
	}
	guest.UpdatedAt = s.auth.clock()
	if err := tx.UpdateUser(ctx, guest); err != nil {
		return nil, nil, err
	}
	return s.addIdentity(ctx, tx, guest, providerID, prof, false)
}

// addIdentity links prof to u; an existing account hears of it by mail.
func (s *Social) addIdentity(ctx context.Context, tx SocialTx, u *account.User, providerID string, prof *social.Profile, isNew bool) (*resolved, *mail.Outgoing, error) {
	if !isNew {
		have, err := tx.IdentitiesOf(ctx, u.ID)
		if err != nil {
			return nil, nil, err
		}
		if len(have) >= maxIdentities {
			return nil, nil, refuse(ErrUnableToLinkAccount, platform.KindUnprocessable, CodeLinkingNotAllowed, "This account has too many linked providers")
		}
	}
	now := s.auth.clock()
	id := &Identity{
		ID: uuid.New(), UserID: u.ID, Provider: providerID, Issuer: prof.Issuer, Subject: prof.Subject,
		Email: prof.Email, CreatedAt: now, UpdatedAt: now,
	}
	if err := tx.InsertIdentity(ctx, id); err != nil {
		return nil, nil, err
	}
	if isNew {
		return &resolved{user: u, isNew: true}, nil, nil
	}
	notice, err := s.notice(mail.TemplateAccountLinked, u, providerID)
	return &resolved{user: u}, notice, err
}

func (s *Social) notice(tmpl mail.Template, u *account.User, providerID string) (*mail.Outgoing, error) {
	m, err := s.auth.mailer.Compose(tmpl, u.Email,
		mail.Data{Name: u.Name, Email: u.Email, Nickname: u.Nickname, Provider: providerID}, s.auth.clock().Add(s.auth.opts.TokenTTL))
	if err != nil {
		return nil, fmt.Errorf("compose %s mail: %w", tmpl, err)
	}
	return m, nil
}

// newUser is the account a first sign-in at a provider makes: no
// password, a generated nickname the player may change later.
func (s *Social) newUser(prof *social.Profile) *account.User {
	now := s.auth.clock()
	nick := generatedNickname("player")
	name := account.NormalizeName(prof.Name)
	if account.ValidateName(name) != nil {
		name = nick
	}
	return &account.User{
		ID: uuid.New(), Realm: account.RealmPlayer, Email: prof.Email, Name: name, Nickname: nick,
		EmailVerified: prof.EmailVerified, CreatedAt: now, UpdatedAt: now,
	}
}

// generatedNickname is prefix and ten random characters: 50 bits, so two
// never meet in practice, and the unique index decides if they do.
func generatedNickname(prefix string) string {
	r := strings.NewReplacer("-", "x", "_", "y").Replace(randomString(10))
	return prefix + "-" + strings.ToLower(r)
}

// discardGuest ends the guest's sessions and removes it with its player
// state, after its owner signed in to another, existing account: the
// guest's progress is not merged (see docs/clients.md).
func (s *Social) discardGuest(ctx context.Context, guestID, signedIn uuid.UUID) {
	if guestID == uuid.Nil || guestID == signedIn {
		return
	}
	if _, err := s.auth.RevokeUserSessions(ctx, guestID); err != nil {
		return // the retention job removes it later
	}
	_ = s.store.DeleteGuest(ctx, guestID) // likewise
}

// IDToken is what a native client holds from a provider: the ID token,
// the nonce it asked for, and optionally the access token, with which the
// userinfo endpoint fills what the ID token leaves out (often the email).
type IDToken struct {
	Token, Nonce, AccessToken string
	// TrustDevice is the trust-device cookie the request carried, which
	// spares a trusted device the second factor.
	TrustDevice string
}

// SignInIDToken signs in with an ID token a native client got from the
// provider itself: signature through the JWKS, issuer, audience, expiry
// and nonce are checked, then the same rules as a callback apply.
func (s *Social) SignInIDToken(ctx context.Context, providerID string, tok IDToken, guest *Principal, client Client) (*Principal, error) {
	prof, err := s.verifyIDToken(ctx, providerID, tok)
	if err != nil {
		return nil, err
	}
	st := StateData{Remember: true}
	if guest != nil && guest.User.IsAnonymous {
		st.GuestID = guest.User.ID
	}
	out, err := s.resolveAPI(ctx, providerID, prof, st)
	if err != nil {
		return nil, err
	}
	// The second factor gates this way in as it does a password.
	pr, err := s.auth.OpenSessionAfterFirstFactor(ctx, out.user, true, client, tok.TrustDevice)
	if _, ok := errors.AsType[*SecondFactorRequired](err); ok {
		s.discardGuest(ctx, st.GuestID, out.user.ID)
	}
	if err != nil {
		return nil, err
	}
	s.discardGuest(ctx, st.GuestID, out.user.ID)
	return pr, nil
}

// verifyIDToken checks a native client's ID token with the provider and
// returns who it names.
func (s *Social) verifyIDToken(ctx context.Context, providerID string, tok IDToken) (*social.Profile, error) {
	p, err := s.Provider(providerID)
	if err != nil {
		return nil, err
	}
	if !p.OpenID() {
		return nil, platform.Errorf(platform.KindNotFound, CodeIDTokenNotSupported, "This provider does not support ID tokens")
	}
	if tok.Token == "" || len(tok.Token) > 16<<10 || len(tok.AccessToken) > 16<<10 {
		return nil, platform.Invalid("idToken.token", "is required and at most 16 KiB")
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	prof, err := p.VerifyIDToken(ctx, tok.Token, tok.Nonce, false)
	if errors.Is(err, social.ErrInvalidToken) {
		return nil, platform.Errorf(platform.KindUnauthenticated, CodeInvalidIDToken, "Invalid token")
	}
	if err == nil && prof.Email == "" {
		prof, err = p.CompleteProfile(ctx, prof, tok.AccessToken)
	}
	if err != nil {
		return nil, platform.Errorf(platform.KindUnauthenticated, CodeFailedToGetUserInfo, "Failed to get user info")
	}
	return prof, nil
}

// LinkIDToken links the provider identity of a native client's ID token
// to the signed-in principal, under the same rules as /link-social's
// callback, and opens no session.
func (s *Social) LinkIDToken(ctx context.Context, providerID string, tok IDToken, p *Principal) error {
	if err := s.requireFreshLink(p); err != nil {
		return err
	}
	prof, err := s.verifyIDToken(ctx, providerID, tok)
	if err != nil {
		return err
	}
	_, err = s.resolveAPI(ctx, providerID, prof, StateData{LinkUserID: p.User.ID, LinkSession: p.Session.TokenHash})
	return err
}

// resolveAPI is resolve with a refusal as the JSON error of the ID-token
// routes.
func (s *Social) resolveAPI(ctx context.Context, providerID string, prof *social.Profile, st StateData) (*resolved, error) {
	out, err := s.resolve(ctx, providerID, prof, st)
	if err != nil {
		var r *linkRefusal
		if errors.As(err, &r) {
			return nil, r.apiErr
		}
		return nil, fmt.Errorf("resolve id token: %w", err)
	}
	return out, nil
}

// LinkedAccount is one way into an account, as list-accounts shows it.
type LinkedAccount struct {
	ID         string    `json:"id"`
	ProviderID string    `json:"providerId"`
	AccountID  string    `json:"accountId"`
	UserID     uuid.UUID `json:"userId"`
	Scopes     []string  `json:"scopes"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// maxIdentities bounds the identities one account may hold, so that a
// list is bounded.
const maxIdentities = 50

// ListAccounts returns the ways into the principal's account: the
// password as "credential", then each provider identity.
func (s *Social) ListAccounts(ctx context.Context, p *Principal) ([]LinkedAccount, error) {
	ids, err := s.store.Identities(ctx, p.User.ID)
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	out := make([]LinkedAccount, 0, len(ids)+1)
	u := p.User
	if u.PasswordHash != "" {
		out = append(out, LinkedAccount{ID: u.ID.String(), ProviderID: CredentialProvider, AccountID: u.ID.String(),
			UserID: u.ID, Scopes: []string{}, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt})
	}
	for _, id := range ids {
		out = append(out, LinkedAccount{ID: id.ID.String(), ProviderID: id.Provider, AccountID: id.Subject,
			UserID: id.UserID, Scopes: []string{}, CreatedAt: id.CreatedAt, UpdatedAt: id.UpdatedAt})
	}
	return out, nil
}

// UnlinkAccount removes one provider identity (named by its local id)
// from the principal's account, never the last way in, and tells the
// owner by mail.
func (s *Social) UnlinkAccount(ctx context.Context, p *Principal, accountID string) error {
	if err := s.requireFreshLink(p); err != nil {
		return err
	}
	id, err := uuid.Parse(accountID)
	notFound := platform.Errorf(platform.KindInvalid, CodeAccountNotFound, "Account not found")
	if err != nil || id == p.User.ID {
		// The credential way in is the password; it is removed by a
		// password reset, never here.
		if err == nil {
			return platform.Errorf(platform.KindInvalid, CodeFailedToUnlinkLast, "The password cannot be unlinked")
		}
		return notFound
	}
	var provider string
	err = s.store.InSocialTx(ctx, func(ctx context.Context, tx SocialTx) error {
		u, err := tx.UserByID(ctx, p.User.ID)
		if err != nil {
			return err
		}
		ids, err := tx.IdentitiesOf(ctx, u.ID)
		if err != nil {
			return err
		}
		for _, i := range ids {
			if i.ID == id {
				provider = i.Provider
			}
		}
		if provider == "" {
			return notFound
		}
		ways := len(ids)
		if u.PasswordHash != "" {
			ways++
		}
		if ways <= 1 {
			return platform.Errorf(platform.KindInvalid, CodeFailedToUnlinkLast, "You cannot unlink your last account")
		}
		if _, err := tx.DeleteIdentity(ctx, u.ID, id); err != nil {
			return err
		}
		m, err := s.notice(mail.TemplateAccountUnlinked, u, provider)
		if err != nil {
			return err
		}
		return tx.EnqueueMail(ctx, m)
	})
	if err != nil {
		var pe *platform.Error
		if errors.As(err, &pe) {
			return err
		}
		return fmt.Errorf("unlink account: %w", err)
	}
	s.auth.mailer.Wake()
	return nil
}

// requireFreshLink asks a recent sign-in (RequireFresh) of whoever links
// or unlinks a provider: a stolen long-lived cookie must not add a way in.
// A guest is spared: it has no other way in to protect, and no password
// to sign in with again. p nil (a sign-in, not a link) passes.
func (s *Social) requireFreshLink(p *Principal) error {
	if p == nil || p.User.IsAnonymous {
		return nil
	}
	return s.auth.RequireFresh(p)
}
