// Package profile changes a player's name and nickname, email address and
// password, each only after the owner confirms by email. A request stores
// a pending change and mails a single-use token; confirm-change presents
// the token and applies the change. An email change takes two
// confirmations: first from the old address, then from the new one.
//
// Every step that sends mail writes the message to the outbox in the same
// transaction as the change, so a request either leaves a pending change
// and its message behind, or nothing.
package profile

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// Type names what a change changes.
type Type string

// The change types.
const (
	TypeProfile  Type = "profile"  // name and nickname
	TypeEmail    Type = "email"    // sign-in email
	TypePassword Type = "password" // password
)

// Types lists the change types.
var Types = []Type{TypeProfile, TypeEmail, TypePassword}

// Step is where a pending change stands, and which confirmation a token
// is for.
type Step string

// The steps.
const (
	// StepConfirm is the one confirmation of a profile or password change.
	StepConfirm Step = "confirm"
	// StepOldEmail is the approval of an email change by the old address.
	StepOldEmail Step = "old-email"
	// StepNewEmail is the confirmation of an email change by the new address.
	StepNewEmail Step = "new-email"
	// StepCompleted marks a change that was applied.
	StepCompleted Step = "completed"
)

// Status is the state of a pending change.
type Status string

// The statuses of a change.
const (
	StatusPending    Status = "pending"
	StatusCompleted  Status = "completed"
	StatusSuperseded Status = "superseded"
)

// Values of Confirmation.Step.
const (
	ResultCompleted                = "completed"
	ResultNewEmailVerificationSent = "new-email-verification-sent"
)

// Error codes of this package. Conflicts with other accounts use the
// account package's codes (NICKNAME_TAKEN, USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL)
// and a wrong current password its INVALID_PASSWORD.
const (
	CodeInvalidToken       = "INVALID_TOKEN"
	CodeTokenExpired       = "TOKEN_EXPIRED"
	CodeInvalidCallbackURL = "INVALID_CALLBACK_URL"
	CodeChangeConflict     = "CHANGE_CONFLICT"
)

var (
	// ErrInvalidToken answers every token that is unknown, malformed, used
	// or superseded alike, so the answer reveals nothing about other tokens.
	ErrInvalidToken = platform.Errorf(platform.KindInvalid, CodeInvalidToken,
		"This confirmation link is invalid or was already used.")
	// ErrTokenExpired: the token was valid but its time ran out.
	ErrTokenExpired = platform.Errorf(platform.KindInvalid, CodeTokenExpired,
		"This confirmation link has expired. Request the change again.")
	// ErrInvalidCallbackURL: the callback URL is not an absolute http(s)
	// URL on a trusted origin.
	ErrInvalidCallbackURL = platform.Errorf(platform.KindForbidden, CodeInvalidCallbackURL, "Invalid callbackURL")
	// ErrChangeConflict: what the change replaces was changed some other
	// way since the request, so applying it would undo that.
	ErrChangeConflict = platform.Errorf(platform.KindConflict, CodeChangeConflict,
		"The account changed since this change was requested. Request it again.")
)

// Change is a pending (or finished) change.
type Change struct {
	ID     uuid.UUID
	UserID uuid.UUID
	Type   Type
	Status Status
	Step   Step
	// The new values; only those of the change's type are set.
	NewName         string
	NewNickname     string
	NewEmail        string
	NewPasswordHash string
	// BaseFingerprint hashes what the change replaces, as it was at
	// request time (see fingerprint).
	BaseFingerprint string
	// CallbackURL is the validated client page the mailed links open.
	CallbackURL string
	// RequestedBy is "user" or the support actor who issued it.
	RequestedBy string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
}

// Token is a stored confirmation token: only its keyed hash.
type Token struct {
	Hash         string
	ChangeID     uuid.UUID
	UserID       uuid.UUID
	Type         Type
	Step         Step
	CreatedAt    time.Time
	ExpiresAt    time.Time
	ConsumedAt   *time.Time
	SupersededAt *time.Time
}

// Confirmation is the answer of confirm-change.
type Confirmation struct {
	Status        bool          `json:"status"`
	Type          Type          `json:"type"`
	Step          string        `json:"step"`
	RequiresLogin bool          `json:"requiresLogin"`
	User          *account.User `json:"user"`
}

// Tx is the transaction a request or a confirmation runs in. Locks are
// always taken user first, so requests and confirmations of one user queue
// behind each other instead of deadlocking.
type Tx interface {
	// LockUser reads the user and holds it until the transaction ends
	// (FOR UPDATE on PostgreSQL).
	LockUser(ctx context.Context, id uuid.UUID) (*account.User, error)
	// TokenByHash returns the token with hash, or nil.
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// ConsumeToken marks the token used if it is unused, not superseded and
	// unexpired at now, and reports whether it did. Of concurrent callers
	// at most one gets true.
	ConsumeToken(ctx context.Context, hash string, now time.Time) (bool, error)
	// LockChange reads a change and holds it.
	LockChange(ctx context.Context, id uuid.UUID) (*Change, error)
	// SupersedePending marks the user's pending changes of the given types
	// (all types when none are given) and their unused tokens superseded.
	SupersedePending(ctx context.Context, userID uuid.UUID, now time.Time, types ...Type) error
	InsertChange(ctx context.Context, c *Change) error
	// UpdateChange writes the status, step and timestamps of c.
	UpdateChange(ctx context.Context, c *Change) error
	InsertToken(ctx context.Context, t *Token) error
	// NicknameTaken reports whether another user of realm has nickname,
	// in any letter case.
	NicknameTaken(ctx context.Context, realm account.Realm, nickname string, except uuid.UUID) (bool, error)
	// EmailTaken reports whether another user of realm has email.
	EmailTaken(ctx context.Context, realm account.Realm, email string, except uuid.UUID) (bool, error)
	// Quarantined reports whether key (account.QuarantineEmailKey or
	// account.QuarantineNicknameKey) is reserved at now for a deleted account.
	Quarantined(ctx context.Context, key string, now time.Time) (bool, error)
	// UpdateProfile, UpdateEmail (which also marks it verified and
	// deletes the password-reset and verification tokens mailed to the old
	// address) and SetPasswordHash return the account package's errors for
	// taken nicknames and emails.
	UpdateProfile(ctx context.Context, userID uuid.UUID, name, nickname string, at time.Time) error
	UpdateEmail(ctx context.Context, userID uuid.UUID, email string, at time.Time) error
	SetPasswordHash(ctx context.Context, userID uuid.UUID, hash string, at time.Time) error
	// RevokeSessions deletes every session of the user.
	RevokeSessions(ctx context.Context, userID uuid.UUID) (int, error)
	EnqueueMail(ctx context.Context, m *mail.Outgoing) error
	InsertAudit(ctx context.Context, e *audit.Entry) error
}

// Store persists pending changes and tokens.
type Store interface {
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Token returns a token and its change, or nil, nil, nil.
	Token(ctx context.Context, hash string) (*Token, *Change, error)
}

// Limiter counts one attempt against every check, all or nothing, in a
// count every replica shares (store.RateLimits); when a check is over its
// rule it counts nothing and returns false with the wait.
type Limiter interface {
	Allow(ctx context.Context, now time.Time, checks ...ratelimit.Check) (bool, time.Duration, error)
	// Refund takes back one attempt that Allow counted.
	Refund(ctx context.Context, checks ...ratelimit.Check) error
}

// Accounts is what the service needs from the account package.
type Accounts interface {
	VerifyPassword(ctx context.Context, u *account.User, password string) error
	HashPassword(ctx context.Context, password string) (string, error)
	Find(ctx context.Context, realm account.Realm, emailOrID string) (*account.User, error)
	ByID(ctx context.Context, id uuid.UUID) (*account.User, error)
}

// Origins decides which origins callback URLs may point to.
type Origins interface {
	Trusted(rawURL string) bool
}

// Options configure the service.
type Options struct {
	// Secret keys the token hashes.
	Secret string
	// TokenTTL is how long each emailed token works (each step gets its own).
	TokenTTL time.Duration
	// RateLimit caps request-* calls per user and confirmation mails per
	// recipient address within RateWindow, counted by Limiter (required
	// when RateLimit is set).
	RateLimit  int
	RateWindow time.Duration
	Limiter    Limiter
	// Watcher hears that a completed change ended the user's sessions (a
	// password) or changed what they show (a name, an email); nil ignores
	// it.
	Watcher SessionWatcher
}

// SessionWatcher hears, after the commit, that a completed change ended
// or changed the sessions of a user (auth.Service.SessionsEnded).
type SessionWatcher interface {
	SessionsEnded(ctx context.Context, userID uuid.UUID, reason string)
}

// Service runs the profile-change flows.
type Service struct {
	store    Store
	accounts Accounts
	composer *mail.Composer
	wake     func()
	origins  Origins
	audit    *audit.Log
	tokenKey []byte
	// secret keys the quarantine of deleted accounts' emails and nicknames.
	secret  string
	ttl     time.Duration
	limiter Limiter
	rule    ratelimit.Rule
	watcher SessionWatcher
	now     func() time.Time
}

// Deps are the services a profile Service works with.
type Deps struct {
	Store    Store
	Accounts Accounts
	// Composer seals the confirmation mails; Wake is called after a commit
	// that enqueued one, so the delivery worker sends it at once (nil:
	// nothing to wake).
	Composer *mail.Composer
	Wake     func()
	// Origins checks that a callback URL is on a trusted origin.
	Origins Origins
	Audit   *audit.Log
}

// New returns the service over d, with the settings of opts.
func New(d Deps, opts Options, now func() time.Time) (*Service, error) {
	if opts.Secret == "" {
		return nil, errors.New("profile: a secret is required")
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.RateWindow <= 0 {
		opts.RateWindow = time.Hour
	}
	if opts.RateLimit > 0 && opts.Limiter == nil {
		return nil, errors.New("profile: a rate limit needs a limiter")
	}
	if d.Wake == nil {
		d.Wake = func() {}
	}
	return &Service{
		store:    d.Store,
		accounts: d.Accounts,
		composer: d.Composer,
		wake:     d.Wake,
		origins:  d.Origins,
		audit:    d.Audit,
		tokenKey: tokenKey(opts.Secret),
		secret:   opts.Secret,
		ttl:      opts.TokenTTL,
		limiter:  opts.Limiter,
		rule:     requestRule(opts.RateLimit, opts.RateWindow),
		watcher:  opts.Watcher,
		now:      now,
	}, nil
}

// requestRule is "n requests per window" as the shared limiter counts it: a
// burst of n, then one more each window. So, as with the sliding window
// this replaced, no window ever holds more than n requests, and the
// Retry-After of a spent burst is the time until its first request is a
// window old; a budget spent comes back one request a window rather than
// all at once. (The rule "n per window" would refill one every
// window/n, letting up to 2n through in a window.)
func requestRule(n int, window time.Duration) ratelimit.Rule {
	if n <= 0 {
		return ratelimit.Rule{}
	}
	return ratelimit.Rule{Limit: n, Window: time.Duration(n) * window}
}

// clock returns the time in UTC at millisecond precision, which both
// databases store exactly.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// Retention is how long finished and abandoned changes, and their tokens,
// stay around for `token inspect`; the old-profile-changes job deletes
// them after that.
const Retention = 30 * 24 * time.Hour
