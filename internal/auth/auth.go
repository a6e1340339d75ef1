// Package auth owns sign-up, sign-in and sessions of both realms. A session
// is a random 32-byte token that the client holds in a signed cookie; the
// database keeps only its SHA-256, so a leaked database opens no session.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/secretbox"
	"github.com/towerdefence/platformctl/internal/sessioncache"
)

// Error codes of this package.
const (
	CodeSignUpDisabled = "EMAIL_PASSWORD_SIGN_UP_DISABLED"
)

var (
	// ErrUnauthenticated: no valid session of the realm.
	ErrUnauthenticated = platform.Errorf(platform.KindUnauthenticated, platform.CodeUnauthorized, "Unauthorized")
	// ErrSessionNotFound is what a Store returns for an unknown token hash.
	ErrSessionNotFound = errors.New("session not found")
	// ErrSignUpDisabled: the realm has no self-service sign-up (admins).
	ErrSignUpDisabled = platform.Errorf(platform.KindInvalid, CodeSignUpDisabled, "Sign up is not available here")
)

// shortSessionTTL is the life of a session created with rememberMe false;
// it is never extended, as in better-auth.
const shortSessionTTL = 24 * time.Hour

// tokenBytes is the entropy of a session token.
const tokenBytes = 32

// Session is a signed-in device. Token is the raw token when the caller
// holds it (its own session) and otherwise an opaque handle that
// RevokeSession accepts in its place.
type Session struct {
	ID        uuid.UUID     `json:"id"`
	Token     string        `json:"token"`
	UserID    uuid.UUID     `json:"userId"`
	Realm     account.Realm `json:"-"`
	Remember  bool          `json:"-"`
	ExpiresAt time.Time     `json:"expiresAt"`
	CreatedAt time.Time     `json:"createdAt"`
	UpdatedAt time.Time     `json:"updatedAt"`
	IPAddress string        `json:"ipAddress"`
	UserAgent string        `json:"userAgent"`
	// TokenHash is the SHA-256 of the token, the only form stored.
	TokenHash TokenHash `json:"-"`
}

// Principal is the caller behind a valid session.
type Principal struct {
	Realm   account.Realm
	User    *account.User
	Session *Session
	// Token is the raw session token from the cookie.
	Token string
	// Refreshed tells the HTTP layer that the expiry slid forward and the
	// cookie should be issued again.
	Refreshed bool
	// Rendering is the memo of what the HTTP layer renders from Session
	// (without its token) and User; set by Authenticate.
	Rendering *Rendering
}

// Client describes where a request came from, recorded on its session.
type Client struct {
	IPAddress string
	UserAgent string
}

// Store persists sessions and mailed tokens. SessionByTokenHash returns
// ErrSessionNotFound for an unknown hash. Writes that go together (a
// sign-up's user and session, a reset's password, revocations and notice)
// run as steps of one Tx in InTx.
type Store interface {
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	InsertSession(ctx context.Context, s *Session) error
	SessionByTokenHash(ctx context.Context, tokenHash TokenHash) (*Session, *account.User, error)
	// ExtendSession reports false when the session no longer exists.
	ExtendSession(ctx context.Context, id uuid.UUID, expiresAt, updatedAt time.Time) (bool, error)
	// DeleteSessions deletes the sessions of userID that m matches and
	// returns how many there were.
	DeleteSessions(ctx context.Context, userID uuid.UUID, m SessionMatch) (int, error)
	// ListUserSessions returns the live sessions of userID, newest first.
	ListUserSessions(ctx context.Context, userID uuid.UUID, now time.Time) ([]Session, error)

	// PeekMailToken returns the live token of purpose and realm with
	// tokenHash, or ErrTokenNotFound; it changes nothing.
	PeekMailToken(ctx context.Context, purpose string, realm account.Realm, tokenHash TokenHash, now time.Time) (*MailToken, error)
}

// Tx is the transaction sign-up, the mailed-token flows and the support
// operations run in. Each method is one step; the rules that combine them
// are this package's.
type Tx interface {
	InsertUser(ctx context.Context, u *account.User) error
	UserByID(ctx context.Context, id uuid.UUID) (*account.User, error)
	SetPasswordHash(ctx context.Context, userID uuid.UUID, hash string, at time.Time) error
	// MarkEmailVerified marks the user's email verified if it is still
	// email, and reports whether it was.
	MarkEmailVerified(ctx context.Context, userID uuid.UUID, email string, at time.Time) (bool, error)

	InsertSession(ctx context.Context, s *Session) error
	DeleteSessions(ctx context.Context, userID uuid.UUID, m SessionMatch) (int, error)
	// AdmitSession holds the user's row until the transaction ends (so a
	// concurrent suspension or deletion waits for it, or it for them) and
	// returns the user's suspension, live or not, or nil; ErrUserGone when
	// the user no longer exists.
	AdmitSession(ctx context.Context, userID uuid.UUID) (*Suspension, error)
	// Quarantined reports whether key is reserved at now.
	Quarantined(ctx context.Context, key string, now time.Time) (bool, error)

	InsertMailToken(ctx context.Context, t *MailToken) error
	// DeleteMailTokens deletes every token of purpose mailed to userID.
	DeleteMailTokens(ctx context.Context, userID uuid.UUID, purpose string) error
	// TakeMailToken deletes the token of purpose and realm with tokenHash
	// and returns it, expired or not; ErrTokenNotFound when there is none.
	// Of concurrent callers at most one gets the token.
	TakeMailToken(ctx context.Context, purpose string, realm account.Realm, tokenHash TokenHash) (*MailToken, error)

	// SupersedeProfileChanges ends the user's pending profile changes and
	// kills their confirmation tokens.
	SupersedeProfileChanges(ctx context.Context, userID uuid.UUID, at time.Time) error
	EnqueueMail(ctx context.Context, m *mail.Outgoing) error
	InsertAudit(ctx context.Context, e *audit.Entry) error
}

// SessionMatch picks some of a user's sessions; the zero value picks all.
type SessionMatch struct {
	// ID, when set, picks only that session.
	ID uuid.UUID
	// TokenHash, when not zero, picks only the session with that token hash.
	TokenHash TokenHash
	// Except, when set, leaves that session out.
	Except uuid.UUID
}

// Options are the session settings.
type Options struct {
	Secret             string
	SessionTTL         time.Duration
	RefreshAfter       time.Duration
	PlayerCookiePrefix string
	AdminCookiePrefix  string
	SecureCookies      bool
	// TrustedOrigins may send state-changing requests with a session
	// cookie and receive redirects; the base URL's origin belongs here.
	TrustedOrigins []string
	// BaseURL is the public URL that mailed links start with.
	BaseURL string
	// TokenTTL is the life of a mailed verification or reset token.
	TokenTTL time.Duration
	// Limits are the attempt budgets per client IP and per account;
	// Limiter counts the attempts.
	Limits  Limits
	Limiter Limiter
	// AnonymousMailFloor is the least time an anonymous request for a
	// verification or reset mail takes, whether or not the account exists,
	// so that its timing does not tell.
	AnonymousMailFloor time.Duration
	// Watcher hears that sessions ended; nil ignores it.
	Watcher SessionWatcher
	// CacheSize is how many validated sessions are kept in process (see
	// sessioncache); 0 keeps none.
	CacheSize int

	// Factors keeps second factors (nil: a service without them, for
	// tools); Keyring seals their seeds.
	Factors FactorStore
	Keyring *secretbox.Keyring
	// FreshAge is how recently a session must have been opened for
	// RequireFresh to pass.
	FreshAge time.Duration
	// Issuer names the service in authenticator apps.
	Issuer string
	// Passkeys keeps passkeys; WebAuthn verifies them (nil: no passkeys).
	Passkeys PasskeyStore
	WebAuthn *webauthn.WebAuthn
	// AdminsNeedSecondFactor makes RequireSecondFactor refuse
	// administrators without one (production).
	AdminsNeedSecondFactor bool
}

// Why sessions ended, as SessionWatcher hears it.
const (
	EndedSignedOut       = "signed_out"
	EndedRevoked         = "revoked"
	EndedPasswordChanged = "password_changed"
	EndedExpired         = "expired"
)

// SessionWatcher hears, after the fact, that some sessions of a user
// ended, so that live streams riding on them can close. It must not block.
type SessionWatcher interface {
	SessionsEnded(ctx context.Context, userID uuid.UUID, reason string)
}

// ended tells this process's session cache and the watcher that sessions
// of userID ended.
func (s *Service) ended(ctx context.Context, userID uuid.UUID, reason string) {
	s.UserSessionsChanged(ctx, userID, reason)
}

// SessionLive reports whether the principal's session still exists and
// has not expired.
func (s *Service) SessionLive(ctx context.Context, p *Principal) (bool, error) {
	sess, _, err := s.store.SessionByTokenHash(ctx, p.Session.TokenHash)
	if errors.Is(err, ErrSessionNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up session: %w", err)
	}
	return sess.ID == p.Session.ID && s.clock().Before(sess.ExpiresAt), nil
}

// Mailer composes messages for the outbox and wakes the delivery worker
// once they are committed (mail.Composer and mail.Worker together).
type Mailer interface {
	Compose(tmpl mail.Template, to string, data mail.Data, expiresAt time.Time) (*mail.Outgoing, error)
	Wake()
}

// Service signs users up and in and manages their sessions.
type Service struct {
	store    Store
	accounts *account.Service
	mailer   Mailer
	cookies  *Cookies
	origins  *Origins
	limiter  Limiter
	factors  FactorStore
	keyring  *secretbox.Keyring
	passkeys PasskeyStore
	webauthn *webauthn.WebAuthn
	opts     Options
	ttl      time.Duration
	refresh  time.Duration
	now      func() time.Time
	// cache holds validated sessions; nil without one (see session_cache.go).
	cache *sessioncache.Cache[*cachedSession]
}

// Deps are the services a session Service works with.
type Deps struct {
	Store    Store
	Accounts *account.Service
	// Mailer sends the verification and reset mails; nil sends none.
	Mailer Mailer
}

// New returns the session service.
func New(d Deps, opts Options, now func() time.Time) *Service {
	s := &Service{
		store:    d.Store,
		accounts: d.Accounts,
		mailer:   d.Mailer,
		cookies: NewCookies(CookieOptions{Secret: opts.Secret, Secure: opts.SecureCookies,
			PlayerPrefix: opts.PlayerCookiePrefix, AdminPrefix: opts.AdminCookiePrefix, TTL: opts.SessionTTL}),
		origins:  NewOrigins(opts.TrustedOrigins),
		limiter:  opts.Limiter,
		factors:  opts.Factors,
		keyring:  opts.Keyring,
		passkeys: opts.Passkeys,
		webauthn: opts.WebAuthn,
		opts:     opts,
		ttl:      opts.SessionTTL,
		refresh:  opts.RefreshAfter,
		now:      now,
	}
	if opts.CacheSize > 0 {
		s.cache = sessioncache.New[*cachedSession](opts.CacheSize)
	}
	return s
}

// Cookies returns the cookie codec of the service.
func (s *Service) Cookies() *Cookies { return s.cookies }

// Origins returns the trusted-origin allow-list of the service.
func (s *Service) Origins() *Origins { return s.origins }

// Accounts returns the account service sessions are built on.
func (s *Service) Accounts() *account.Service { return s.accounts }

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// NewToken returns a fresh random token and the SHA-256 that is stored.
func NewToken() (token string, hash TokenHash, err error) {
	var raw [tokenBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", TokenHash{}, fmt.Errorf("generate token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(raw[:])
	return token, HashToken(token), nil
}

// TokenHash is the SHA-256 digest of a session or mailed token: the form in
// which they are stored and looked up. It is kept as the 32 bytes
// themselves, not as hex, so the unique index over every session holds
// half as many bytes per entry.
type TokenHash [sha256.Size]byte

// HashToken returns the digest of a token.
func HashToken(token string) TokenHash { return sha256.Sum256([]byte(token)) }

// Equal reports whether h and o are the same digest, in constant time, so
// that comparing a presented token's hash with a stored one reveals
// nothing through its timing.
func (h TokenHash) Equal(o TokenHash) bool { return subtle.ConstantTimeCompare(h[:], o[:]) == 1 }

// IsZero reports whether h is the zero value, which no token hashes to:
// "no hash given".
func (h TokenHash) IsZero() bool { return h == TokenHash{} }

// newSession builds a session for userID; the caller stores it.
func (s *Service) newSession(realm account.Realm, userID uuid.UUID, remember bool, client Client) (*Session, string, error) {
	token, hash, err := NewToken()
	if err != nil {
		return nil, "", err
	}
	now := s.clock()
	ttl := s.ttl
	if !remember {
		ttl = min(shortSessionTTL, s.ttl)
	}
	return &Session{
		ID: uuid.New(), Token: token, TokenHash: hash, UserID: userID, Realm: realm, Remember: remember,
		ExpiresAt: now.Add(ttl), CreatedAt: now, UpdatedAt: now,
		IPAddress: truncate(client.IPAddress, 64), UserAgent: truncate(client.UserAgent, 512),
	}, token, nil
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// SignUp creates a player account and its first session in one
// transaction. Only the player realm has self-service sign-up.
func (s *Service) SignUp(ctx context.Context, realm account.Realm, in account.NewUser, remember bool, client Client) (*Principal, error) {
	if realm != account.RealmPlayer {
		return nil, ErrSignUpDisabled
	}
	if err := account.CheckNewUser(realm, in); err != nil {
		return nil, err
	}
	counted, err := s.allow(ctx, actionSignUp, realm, client, in.Email, s.opts.Limits.LoginIP, s.opts.Limits.LoginAccount)
	if err != nil {
		return nil, err
	}
	u, err := s.accounts.Prepare(hashingFor(ctx, realm, client, in.Email), realm, in)
	if err != nil {
		return nil, s.refundUnhashed(ctx, err, counted)
	}
	sess, token, err := s.newSession(realm, u.ID, remember, client)
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.checkQuarantine(ctx, tx, u); err != nil {
			return err
		}
		if err := tx.InsertUser(ctx, u); err != nil {
			return err
		}
		return tx.InsertSession(ctx, sess)
	})
	if err != nil {
		return nil, fmt.Errorf("sign up: %w", err)
	}
	return &Principal{Realm: realm, User: u, Session: sess, Token: token}, nil
}

// SignIn checks an email and password in realm and opens a new session,
// or answers *SecondFactorRequired (see OpenSessionAfterFirstFactor).
func (s *Service) SignIn(ctx context.Context, realm account.Realm, email, password string, remember bool, client Client) (*Principal, error) {
	return s.SignInTrusted(ctx, realm, email, password, remember, client, "")
}

// SignInTrusted is SignIn from a device that may carry a trust-device
// cookie value, which spares it the second factor while it is valid.
func (s *Service) SignInTrusted(ctx context.Context, realm account.Realm, email, password string, remember bool, client Client, trustDevice string) (*Principal, error) {
	if err := account.CheckCredentials(email, password); err != nil {
		return nil, err
	}
	counted, err := s.allow(ctx, actionSignIn, realm, client, email, s.opts.Limits.LoginIP, s.opts.Limits.LoginAccount)
	if err != nil {
		return nil, err
	}
	u, err := s.accounts.Authenticate(hashingFor(ctx, realm, client, email), realm, email, password)
	if err != nil {
		return nil, s.refundUnhashed(ctx, err, counted)
	}
	return s.OpenSessionAfterFirstFactor(ctx, u, remember, client, trustDevice)
}

// OpenSession starts a session for a user who has proved every factor
// asked of them. Ways in call OpenSessionAfterFirstFactor instead; this is
// for the second factor's completion, tools and tests. Every way in for an
// existing user ends here, so the gates a new session passes
// (admitSession: suspension) sit in one place.
func (s *Service) OpenSession(ctx context.Context, u *account.User, remember bool, client Client) (*Principal, error) {
	sess, token, err := s.newSession(u.Realm, u.ID, remember, client)
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.admitSession(ctx, tx, u); err != nil {
			return err
		}
		return tx.InsertSession(ctx, sess)
	})
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	return &Principal{Realm: u.Realm, User: u, Session: sess, Token: token}, nil
}

// SessionFromRequest returns the principal of realm behind r's session
// cookie, or ErrUnauthenticated. This is the one check every protected
// route uses.
func (s *Service) SessionFromRequest(ctx context.Context, realm account.Realm, r *http.Request) (*Principal, error) {
	token, ok := s.cookies.TokenFromRequest(realm, r)
	if !ok {
		return nil, ErrUnauthenticated
	}
	return s.Authenticate(ctx, realm, token)
}

// Authenticate returns the principal of realm behind a raw token, or
// ErrUnauthenticated. It costs one indexed query, or none when the session
// is in the cache; a remembered session that was last extended more than
// RefreshAfter ago is extended to a full TTL (one more write, at most once
// per RefreshAfter). An expired session is deleted on sight.
func (s *Service) Authenticate(ctx context.Context, realm account.Realm, token string) (*Principal, error) {
	return s.authenticate(ctx, realm, token, true)
}

// AuthenticateNoRefresh is Authenticate without extending the session, for
// better-auth's get-session?disableRefresh=true.
func (s *Service) AuthenticateNoRefresh(ctx context.Context, realm account.Realm, token string) (*Principal, error) {
	return s.authenticate(ctx, realm, token, false)
}

func (s *Service) authenticate(ctx context.Context, realm account.Realm, token string, refresh bool) (*Principal, error) {
	if token == "" || len(token) > 256 {
		return nil, ErrUnauthenticated
	}
	hash := HashToken(token)
	now := s.clock()
	sess, u, rendering, ok := s.cachedSession(hash, now, refresh)
	if !ok {
		var err error
		if sess, u, rendering, err = s.readSession(ctx, hash); err != nil {
			return nil, err
		}
	}
	// A token of the other realm is as good as no token: a player cookie
	// never opens an admin route.
	if sess.Realm != realm || u.Realm != realm {
		return nil, ErrUnauthenticated
	}
	if !now.Before(sess.ExpiresAt) {
		if _, err := s.store.DeleteSessions(ctx, sess.UserID, SessionMatch{ID: sess.ID}); err != nil {
			return nil, fmt.Errorf("delete expired session: %w", err)
		}
		s.ended(ctx, sess.UserID, EndedExpired)
		return nil, ErrUnauthenticated
	}
	sess.Token = token
	p := &Principal{Realm: realm, User: u, Session: sess, Token: token, Rendering: rendering}
	if refresh && s.refreshDue(sess, now) {
		ticket := s.beginRead()
		expires := now.Add(s.ttl)
		ok, err := s.store.ExtendSession(ctx, sess.ID, expires, now)
		if err != nil {
			return nil, fmt.Errorf("extend session: %w", err)
		}
		if !ok { // revoked between the read and the write
			return nil, ErrUnauthenticated
		}
		sess.ExpiresAt, sess.UpdatedAt = expires, now
		p.Refreshed = true
		p.Rendering = s.keepSession(ticket, hash, sess, u)
	}
	return p, nil
}

// refreshDue says whether a remembered session was last extended more
// than RefreshAfter ago.
func (s *Service) refreshDue(sess *Session, now time.Time) bool {
	return sess.Remember && !now.Before(sess.ExpiresAt.Add(-s.ttl).Add(s.refresh))
}

// readSession reads the session with hash from the database and keeps it
// in the cache.
func (s *Service) readSession(ctx context.Context, hash TokenHash) (*Session, *account.User, *Rendering, error) {
	ticket := s.beginRead()
	sess, u, err := s.store.SessionByTokenHash(ctx, hash)
	if errors.Is(err, ErrSessionNotFound) {
		return nil, nil, nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("look up session: %w", err)
	}
	return sess, u, s.keepSession(ticket, hash, sess, u), nil
}

// SignOut ends the principal's session.
func (s *Service) SignOut(ctx context.Context, p *Principal) error {
	if _, err := s.store.DeleteSessions(ctx, p.User.ID, SessionMatch{ID: p.Session.ID}); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	s.ended(ctx, p.User.ID, EndedSignedOut)
	return nil
}

// ListSessions returns the principal's live sessions, newest first. The
// current session carries its token; the others carry their id as a handle
// that RevokeSession accepts, since their tokens are not stored.
func (s *Service) ListSessions(ctx context.Context, p *Principal) ([]Session, error) {
	list, err := s.store.ListUserSessions(ctx, p.User.ID, s.clock())
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	for i := range list {
		if list[i].ID == p.Session.ID {
			list[i].Token = p.Token
		} else {
			list[i].Token = list[i].ID.String()
		}
	}
	return list, nil
}

// RevokeSession ends one of the principal's own sessions, named by its raw
// token or by the handle ListSessions gave. A token of someone else's
// session is silently ignored, as in better-auth. It reports whether the
// current session was the one revoked.
func (s *Service) RevokeSession(ctx context.Context, p *Principal, tokenOrHandle string) (current bool, err error) {
	if id, perr := uuid.Parse(tokenOrHandle); perr == nil && len(tokenOrHandle) == 36 {
		if _, err := s.store.DeleteSessions(ctx, p.User.ID, SessionMatch{ID: id}); err != nil {
			return false, fmt.Errorf("revoke session: %w", err)
		}
		s.ended(ctx, p.User.ID, EndedRevoked)
		return id == p.Session.ID, nil
	}
	if tokenOrHandle == "" || len(tokenOrHandle) > 256 {
		return false, nil
	}
	hash := HashToken(tokenOrHandle)
	if _, err := s.store.DeleteSessions(ctx, p.User.ID, SessionMatch{TokenHash: hash}); err != nil {
		return false, fmt.Errorf("revoke session: %w", err)
	}
	s.ended(ctx, p.User.ID, EndedRevoked)
	return hash.Equal(p.Session.TokenHash), nil
}

// RevokeSessions ends every session of the principal's user.
func (s *Service) RevokeSessions(ctx context.Context, p *Principal) error {
	_, err := s.RevokeUserSessions(ctx, p.User.ID)
	return err
}

// RevokeOtherSessions ends every session of the principal's user but the
// current one.
func (s *Service) RevokeOtherSessions(ctx context.Context, p *Principal) error {
	if _, err := s.store.DeleteSessions(ctx, p.User.ID, SessionMatch{Except: p.Session.ID}); err != nil {
		return fmt.Errorf("revoke other sessions: %w", err)
	}
	s.ended(ctx, p.User.ID, EndedRevoked)
	return nil
}

// RevokeUserSessions ends every session of a user and returns how many
// there were.
func (s *Service) RevokeUserSessions(ctx context.Context, userID uuid.UUID) (int, error) {
	n, err := s.store.DeleteSessions(ctx, userID, SessionMatch{})
	if err != nil {
		return 0, fmt.Errorf("revoke sessions: %w", err)
	}
	s.ended(ctx, userID, EndedRevoked)
	return n, nil
}
