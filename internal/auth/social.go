package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/ratelimit"
	"github.com/towerdefence/platformctl/internal/social"
)

// Error codes of the social routes (better-auth's).
const (
	CodeProviderNotFound         = "PROVIDER_NOT_FOUND"
	CodeIDTokenNotSupported      = "ID_TOKEN_NOT_SUPPORTED"
	CodeInvalidIDToken           = "INVALID_TOKEN"
	CodeFailedToGetUserInfo      = "FAILED_TO_GET_USER_INFO"
	CodeUserEmailNotFound        = "USER_EMAIL_NOT_FOUND"
	CodeOAuthLinkError           = "OAUTH_LINK_ERROR"
	CodeSocialAlreadyLinked      = "SOCIAL_ACCOUNT_ALREADY_LINKED"
	CodeLinkingDifferentEmails   = "LINKING_DIFFERENT_EMAILS_NOT_ALLOWED"
	CodeLinkingNotAllowed        = "LINKING_NOT_ALLOWED"
	CodeFailedToUnlinkLast       = "FAILED_TO_UNLINK_LAST_ACCOUNT"
	CodeAccountNotFound          = "ACCOUNT_NOT_FOUND"
	CodeInvalidErrorCallbackURL  = "INVALID_ERROR_CALLBACK_URL"
	CodeInvalidNewUserCallback   = "INVALID_NEW_USER_CALLBACK_URL"
	CodeAnonymousCannotSignInTwo = "ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY"
)

// The ?error= codes of a failed callback (better-auth's).
const (
	ErrStateNotFound        = "state_not_found"
	ErrStateMismatch        = "state_mismatch"
	ErrNoCode               = "no_code"
	ErrIssuerMismatch       = "issuer_mismatch"
	ErrInvalidCode          = "invalid_code"
	ErrUnableToGetUserInfo  = "unable_to_get_user_info"
	ErrEmailNotFound        = "email_not_found"
	ErrAccountNotLinked     = "account_not_linked"
	ErrUnableToCreateUser   = "unable_to_create_user"
	ErrEmailNotVerified     = "email_not_verified"
	ErrUnableToLinkAccount  = "unable_to_link_account"
	ErrEmailDoesNotMatch    = "email_does_not_match"
	ErrLinkedToAnotherUser  = "account_already_linked_to_different_user"
	ErrProviderNotFoundCode = "oauth_provider_not_found"
)

// CredentialProvider is the providerId list-accounts gives the email and
// password way in, as better-auth does.
const CredentialProvider = "credential"

// actionSocial counts provider sign-ins and links started per address.
const actionSocial = "sign-in-social"

// stateTTL is the life of a sign-in at a provider, row and cookie alike.
const stateTTL = 5 * time.Minute

// stateCookie is the suffix of the cookie that binds a state to the
// browser that started the sign-in.
const stateCookie = ".state"

// Identity is an account at an identity provider linked to a user.
type Identity struct {
	ID        uuid.UUID
	UserID    uuid.UUID
	Provider  string
	Issuer    string
	Subject   string
	Email     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// OAuthState is a sign-in or link in flight. Only the SHA-256 of the
// state sent to the provider is stored.
type OAuthState struct {
	Hash      TokenHash
	Provider  string
	Data      StateData
	ExpiresAt time.Time
	CreatedAt time.Time
}

// StateData is what a state carries from the start to the callback.
type StateData struct {
	Verifier    string    `json:"verifier"`
	Nonce       string    `json:"nonce"`
	CallbackURL string    `json:"callbackURL"`
	ErrorURL    string    `json:"errorURL"`
	NewUserURL  string    `json:"newUserURL"`
	RedirectURI string    `json:"redirectURI"`
	LinkUserID  uuid.UUID `json:"linkUserId,omitzero"`
	// LinkSession is the hash of the linking session, which must still be
	// live at the callback.
	LinkSession TokenHash `json:"linkSession,omitzero"`
	GuestID     uuid.UUID `json:"guestId,omitzero"`
	Remember    bool      `json:"remember"`
}

// ErrOAuthStateNotFound is what a SocialTx returns for an unknown state.
var ErrOAuthStateNotFound = errors.New("oauth state not found")

// ErrIdentityNotFound is what a SocialStore returns for an unknown identity.
var ErrIdentityNotFound = errors.New("identity not found")

// SocialStore persists identities, states and guests.
type SocialStore interface {
	InSocialTx(ctx context.Context, fn func(ctx context.Context, tx SocialTx) error) error
	InsertOAuthState(ctx context.Context, st *OAuthState) error
	// Identities returns the user's identities, oldest first.
	Identities(ctx context.Context, userID uuid.UUID) ([]Identity, error)
	// DeleteGuest deletes the user if it is still a guest, with its
	// player state.
	DeleteGuest(ctx context.Context, userID uuid.UUID) error
}

// SocialTx is the transaction a provider sign-in, a link or an unlink
// runs in.
type SocialTx interface {
	// TakeOAuthState deletes and returns the state with hash, expired or
	// not; of concurrent callers at most one gets it.
	TakeOAuthState(ctx context.Context, hash TokenHash) (*OAuthState, error)
	IdentityBySubject(ctx context.Context, issuer, subject string) (*Identity, error)
	InsertIdentity(ctx context.Context, id *Identity) error
	// DeleteIdentity deletes the user's identity id and reports whether
	// there was one.
	DeleteIdentity(ctx context.Context, userID, id uuid.UUID) (bool, error)
	// IdentitiesOf returns the user's identities, oldest first.
	IdentitiesOf(ctx context.Context, userID uuid.UUID) ([]Identity, error)
	UserByID(ctx context.Context, id uuid.UUID) (*account.User, error)
	UserByEmail(ctx context.Context, realm account.Realm, email string) (*account.User, error)
	InsertUser(ctx context.Context, u *account.User) error
	// UpdateUser writes u's email, name, nickname, verification, password
	// hash and guest flag.
	UpdateUser(ctx context.Context, u *account.User) error
	EnqueueMail(ctx context.Context, m *mail.Outgoing) error
}

// Social signs players in through identity providers and as guests, and
// links and unlinks providers. Every session it opens goes through
// Service.OpenSession.
type Social struct {
	auth      *Service
	store     SocialStore
	providers map[string]*social.Provider
	opts      SocialOptions
}

// SocialOptions are the provider and guest sign-in settings.
type SocialOptions struct {
	// Timeout bounds the calls to a provider of one request.
	Timeout time.Duration
	// GuestsPerIP caps guest creations per client address.
	GuestsPerIP ratelimit.Rule
}

// NewSocial returns the provider and guest sign-in service.
func NewSocial(a *Service, store SocialStore, providers map[string]*social.Provider, opts SocialOptions) *Social {
	if providers == nil {
		providers = map[string]*social.Provider{}
	}
	return &Social{auth: a, store: store, providers: providers, opts: opts}
}

// Provider returns the provider id, or 404 PROVIDER_NOT_FOUND.
func (s *Social) Provider(id string) (*social.Provider, error) {
	if p, ok := s.providers[id]; ok {
		return p, nil
	}
	return nil, platform.Errorf(platform.KindNotFound, CodeProviderNotFound, "Provider not found")
}

// RedirectURI is the callback URL registered at every provider.
func (s *Social) RedirectURI(providerID string) string {
	return s.auth.opts.BaseURL + MountPath(account.RealmPlayer) + "/callback/" + providerID
}

// ErrorURL is the default page failed callbacks land on.
func (s *Social) ErrorURL() string {
	return s.auth.opts.BaseURL + MountPath(account.RealmPlayer) + "/error"
}

// SocialStart is the request of /sign-in/social and /link-social.
type SocialStart struct {
	Provider           string
	CallbackURL        string
	NewUserCallbackURL string
	ErrorCallbackURL   string
	LoginHint          string
	Scopes             []string
	Remember           bool
}

// CheckURLs origin-checks the three callback URLs.
func (s *Social) CheckURLs(in SocialStart) error {
	o := s.auth.origins
	if err := o.CheckCallback(in.CallbackURL, CodeInvalidCallbackURL); err != nil {
		return err
	}
	if err := o.CheckCallback(in.ErrorCallbackURL, CodeInvalidErrorCallbackURL); err != nil {
		return err
	}
	return o.CheckCallback(in.NewUserCallbackURL, CodeInvalidNewUserCallback)
}

// Redirect is where a sign-in at a provider starts: the authorization URL
// and the state to bind to the browser in a cookie.
type Redirect struct {
	URL   string
	State string
}

// Begin stores a new state and returns the provider's authorization URL.
// link is the signed-in principal of /link-social (nil for a sign-in);
// guest is the caller's guest session, whose player state an upgrade
// keeps.
func (s *Social) Begin(ctx context.Context, in SocialStart, link, guest *Principal, client Client) (*Redirect, error) {
	p, err := s.Provider(in.Provider)
	if err != nil {
		return nil, err
	}
	if err := s.requireFreshLink(link); err != nil {
		return nil, err
	}
	if err := s.CheckURLs(in); err != nil {
		return nil, err
	}
	// Each start stores a state row: the sign-in budget per address bounds
	// how many one client can leave behind.
	if _, err := s.auth.allow(ctx, actionSocial, account.RealmPlayer, client, "", s.auth.opts.Limits.LoginIP, s.auth.opts.Limits.LoginIP); err != nil {
		return nil, err
	}
	if len(in.Scopes) > 20 || len(in.LoginHint) > 256 {
		return nil, platform.Invalid("scopes", "at most 20 scopes and a login hint of at most 256 characters")
	}
	state, nonce := randomString(32), randomString(32)
	data := StateData{
		Verifier: oauth2.GenerateVerifier(), Nonce: nonce, CallbackURL: in.CallbackURL, ErrorURL: in.ErrorCallbackURL,
		NewUserURL: in.NewUserCallbackURL, RedirectURI: s.RedirectURI(p.ID()), Remember: in.Remember,
	}
	if link != nil {
		data.LinkUserID, data.LinkSession = link.User.ID, link.Session.TokenHash
	}
	if guest != nil && guest.User.IsAnonymous {
		data.GuestID = guest.User.ID
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	u, err := p.AuthCodeURL(ctx, social.AuthRequest{
		State: state, Verifier: data.Verifier, Nonce: nonce, RedirectURI: data.RedirectURI,
		LoginHint: in.LoginHint, Scopes: in.Scopes,
	})
	if err != nil {
		return nil, platform.Errorf(platform.KindUnauthenticated, CodeFailedToGetUserInfo, "The provider is not answering")
	}
	now := s.auth.clock()
	st := &OAuthState{Hash: HashToken(state), Provider: p.ID(), Data: data, ExpiresAt: now.Add(stateTTL), CreatedAt: now}
	if err := s.store.InsertOAuthState(ctx, st); err != nil {
		return nil, fmt.Errorf("begin social sign-in: %w", err)
	}
	return &Redirect{URL: u, State: state}, nil
}

// randomString returns n characters of better-auth's alphabet.
func randomString(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	for i := range b {
		b[i] = alphabet[b[i]&63]
	}
	return string(b)
}

// StateCookie returns the cookie that binds state to the browser.
func (c *Cookies) StateCookie(state string) *http.Cookie {
	return c.cookie(c.name(account.RealmPlayer, stateCookie), c.Sign(state), int(stateTTL/time.Second))
}

// ClearStateCookie returns the cookie that removes the state cookie.
func (c *Cookies) ClearStateCookie() *http.Cookie {
	return c.cookie(c.name(account.RealmPlayer, stateCookie), "", -1)
}

// StateFromRequest returns the state of the signed state cookie.
func (c *Cookies) StateFromRequest(r *http.Request) string {
	for _, name := range []string{c.name(account.RealmPlayer, stateCookie), "__Secure-" + c.name(account.RealmPlayer, stateCookie)} {
		if ck, err := r.Cookie(name); err == nil {
			if v, ok := c.Verify(ck.Value); ok {
				return v
			}
		}
	}
	return ""
}

// Callback is what a provider sent back to /callback/{provider}.
type Callback struct {
	Code, State, CookieState, Issuer, Error, ErrorDescription string
	// User is Apple's user form field (the name, on the first sign-in).
	User string
	// TrustDevice is the trust-device cookie the browser carried.
	TrustDevice string
}

// CallbackResult is where a callback sends the browser, and the session
// it opened, if any.
type CallbackResult struct {
	Location  string
	Principal *Principal
	// SecondFactor is set instead of Principal when the account holds a
	// second factor: the browser goes to Location with
	// twoFactorRedirect=true and finishes with the two_factor cookie.
	SecondFactor *SecondFactorRequired
}

// Finish completes a sign-in or link at a provider. It never returns an
// error: every failure is a redirect to the error URL with better-auth's
// ?error= code, and internal failures are returned in logErr for the log.
func (s *Social) Finish(ctx context.Context, providerID string, cb Callback, client Client) (res CallbackResult, logErr error) {
	fail := func(errorURL, code string, err error) (CallbackResult, error) {
		return CallbackResult{Location: s.errorLocation(errorURL, code)}, err
	}
	p, ok := s.providers[providerID]
	if !ok {
		return fail("", ErrProviderNotFoundCode, nil)
	}
	if cb.State == "" || len(cb.State) > 128 {
		return fail("", ErrStateNotFound, nil)
	}
	if cb.CookieState == "" || subtle.ConstantTimeCompare([]byte(cb.State), []byte(cb.CookieState)) != 1 {
		return fail("", ErrStateMismatch, nil)
	}
	st, err := s.takeState(ctx, providerID, cb.State)
	if err != nil || st == nil {
		return fail("", ErrStateNotFound, err)
	}
	errURL := st.Data.ErrorURL
	switch {
	case cb.Error != "":
		return fail(errURL, sanitizeCode(cb.Error), nil)
	case cb.Code == "":
		return fail(errURL, ErrNoCode, nil)
	}
	pctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	if err := p.CheckIssuer(pctx, cb.Issuer); err != nil {
		return fail(errURL, providerErrorCode(err), nil)
	}
	prof, err := p.Exchange(pctx, cb.Code, st.Data.Verifier, st.Data.Nonce, st.Data.RedirectURI)
	if err != nil {
		return fail(errURL, providerErrorCode(err), nil)
	}
	if prof.Name == "" {
		prof.Name = social.AppleName(cb.User)
	}
	out, err := s.resolve(ctx, p.ID(), prof, st.Data)
	if err != nil {
		code, internal := resolveErrorCode(err)
		return fail(errURL, code, internal)
	}
	loc := orDefault(st.Data.CallbackURL, "/")
	if out.isNew && st.Data.NewUserURL != "" {
		loc = st.Data.NewUserURL
	}
	if st.Data.LinkUserID != uuid.Nil {
		return CallbackResult{Location: loc}, nil
	}
	// The second factor gates this way in as it does a password.
	pr, err := s.auth.OpenSessionAfterFirstFactor(ctx, out.user, st.Data.Remember, client, cb.TrustDevice)
	if req, ok := errors.AsType[*SecondFactorRequired](err); ok {
		s.discardGuest(ctx, st.Data.GuestID, out.user.ID)
		return CallbackResult{Location: withSecondFactor(loc, req.Methods), SecondFactor: req}, nil
	}
	if pe, ok := errors.AsType[*platform.Error](err); ok && pe.Code == platform.CodeAccountSuspended {
		return fail(errURL, errAccountSuspended, nil)
	}
	if err != nil {
		return fail(errURL, ErrUnableToCreateUser, err)
	}
	s.discardGuest(ctx, st.Data.GuestID, out.user.ID)
	return CallbackResult{Location: loc, Principal: pr}, nil
}

// takeState consumes the state row; nil when there is none or it expired.
func (s *Social) takeState(ctx context.Context, providerID, state string) (*OAuthState, error) {
	var st *OAuthState
	err := s.store.InSocialTx(ctx, func(ctx context.Context, tx SocialTx) error {
		var err error
		st, err = tx.TakeOAuthState(ctx, HashToken(state))
		return err
	})
	if errors.Is(err, ErrOAuthStateNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("take oauth state: %w", err)
	}
	if st.Provider != providerID || !s.auth.clock().Before(st.ExpiresAt) {
		return nil, nil
	}
	return st, nil
}

func (s *Social) errorLocation(errorURL, code string) string {
	base := orDefault(errorURL, s.ErrorURL())
	u, err := url.Parse(base)
	if err != nil {
		u, _ = url.Parse(s.ErrorURL())
	}
	q := u.Query()
	q.Set("error", code)
	u.RawQuery = q.Encode()
	return u.String()
}

// sanitizeCode passes a provider's error code on only when it looks like
// one (RFC 6749 codes are a-z and _), so nothing else reaches the page.
func sanitizeCode(code string) string {
	if len(code) > 64 {
		return "invalid_callback_request"
	}
	for _, c := range code {
		if (c < 'a' || c > 'z') && c != '_' {
			return "invalid_callback_request"
		}
	}
	return code
}

func providerErrorCode(err error) string {
	switch {
	case errors.Is(err, social.ErrIssuerMismatch):
		return ErrIssuerMismatch
	case errors.Is(err, social.ErrInvalidCode):
		return ErrInvalidCode
	}
	return ErrUnableToGetUserInfo
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// errAccountSuspended is the ?error= code of a callback whose account is
// suspended.
const errAccountSuspended = "account_suspended"

// withSecondFactor adds to loc what the page needs to ask for the second
// factor: twoFactorRedirect=true and the methods, the fields better-auth's
// sign-in answers with.
func withSecondFactor(loc string, methods []string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	q := u.Query()
	q.Set("twoFactorRedirect", "true")
	q.Set("twoFactorMethods", strings.Join(methods, ","))
	u.RawQuery = q.Encode()
	return u.String()
}
