// Package lifecycle owns the end of a player's account: deletion (by the
// player, confirmed by password, fresh session or a mailed link; by
// support), the tombstone and quarantine it leaves, the export of
// everything held about a player, and suspension.
//
// A deletion is one transaction composed of the owning services' steps:
// auth ends the sessions (so every replica closes the user's streams),
// player takes the user out of their lobby (a hosted lobby passes to the
// earliest remaining member, or closes), and the store removes every
// other row that refers to the user by one list of rules, one entry per
// referencing column (store.UserReferences); a test walks the schema's
// foreign keys so that a table added without a rule fails it.
package lifecycle

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
)

// Error codes of this package, besides platform's ACCOUNT_* codes.
const (
	CodeLastOwner            = "LAST_OWNER"
	CodeAdminNotSelfService  = "ADMIN_DELETION_NOT_SELF_SERVICE"
	CodeInvalidPassword      = "INVALID_PASSWORD"
	CodeDeletionTokenInvalid = "INVALID_TOKEN"
	CodeUserIsNotAnonymous   = "USER_IS_NOT_ANONYMOUS"
)

var (
	errGone = platform.Errorf(platform.KindNotFound, platform.CodeAccountDeleted,
		"This account was deleted, or is being deleted")
	errLastOwner = platform.Errorf(platform.KindConflict, CodeLastOwner,
		"The last administrator with the admin role cannot be deleted")
	errAdminSelf = platform.Errorf(platform.KindForbidden, CodeAdminNotSelfService,
		"Administrators are deleted with the admin tools")
	errInvalidPassword = platform.Errorf(platform.KindInvalid, CodeInvalidPassword, "Invalid password")
	errInvalidToken    = platform.Errorf(platform.KindNotFound, CodeDeletionTokenInvalid, "Invalid token")
	errNotAnonymous    = platform.Errorf(platform.KindForbidden, CodeUserIsNotAnonymous, "User is not anonymous")
)

// Tombstone is what remains of a deleted account: its id (never given out
// again), realm, when, why and by whom. It holds no personal data.
type Tombstone struct {
	ID        uuid.UUID     `json:"id"`
	Realm     account.Realm `json:"realm"`
	DeletedAt time.Time     `json:"deletedAt"`
	Reason    string        `json:"reason"`
	Actor     string        `json:"actor"`
}

// DeletionToken is a mailed link's token, kept as its hash.
type DeletionToken struct {
	TokenHash auth.TokenHash
	UserID    uuid.UUID
	ExpiresAt time.Time
	CreatedAt time.Time
}

// Erasure names what a deletion removes beyond the rows that refer to the
// user by id: the personal data audit entries may carry, the rate-limit
// keys derived from the email and id, and mail still addressed to it.
type Erasure struct {
	User *account.User
	// Personal are the strings audit entries must lose (email, name,
	// nickname).
	Personal []string
	// LimitKeys are the rate-limit keys that name the user.
	LimitKeys []string
}

// Tx is the transaction a deletion or suspension runs in: the steps of
// auth and player, and this package's own.
type Tx interface {
	auth.Tx
	player.Tx

	// LockUser reads the user and holds its row until the transaction
	// ends; account.ErrNotFound when there is none.
	LockUser(ctx context.Context, id uuid.UUID) (*account.User, error)
	// CountAdmins counts administrators whose role is r ("" counts
	// administrators without a role, who have the default one).
	CountAdmins(ctx context.Context, r string) (int, error)
	// EraseUser removes every row that refers to the user (by the
	// store's list of rules), strips e.Personal from the audit entries
	// about them, drops e.LimitKeys and the mail queued to the address,
	// and deletes the user.
	EraseUser(ctx context.Context, e Erasure) error
	InsertTombstone(ctx context.Context, t *Tombstone) error
	// Quarantine reserves identifier hashes until freeAt.
	Quarantine(ctx context.Context, keyHashes []string, freeAt time.Time) error

	InsertDeletionToken(ctx context.Context, t *DeletionToken) error
	// TakeDeletionToken deletes and returns the token with hash h;
	// ErrTokenNotFound when there is none. Of concurrent callers at most
	// one gets it.
	TakeDeletionToken(ctx context.Context, h auth.TokenHash) (*DeletionToken, error)

	// SetSuspension replaces the user's suspension; DeleteSuspension
	// removes it and reports whether there was one.
	SetSuspension(ctx context.Context, s *auth.Suspension) error
	DeleteSuspension(ctx context.Context, userID uuid.UUID) (bool, error)
}

// Store opens transactions and answers the read-only questions.
type Store interface {
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	Tombstone(ctx context.Context, id uuid.UUID) (*Tombstone, error)
	// Quarantined reports whether any of the hashes is reserved at now.
	Quarantined(ctx context.Context, keyHashes []string, now time.Time) (bool, error)
	Suspension(ctx context.Context, userID uuid.UUID) (*auth.Suspension, error)
	// Export reads everything held about the user.
	Export(ctx context.Context, u *account.User) (*Export, error)
	// FindUsers lists accounts whose email or nickname starts with
	// prefix, at most limit.
	FindUsers(ctx context.Context, realm account.Realm, prefix string, limit int) ([]*account.User, error)
}

// ErrTokenNotFound is what TakeDeletionToken returns for an unknown hash.
var ErrTokenNotFound = auth.ErrTokenNotFound

// Mailer composes messages for the outbox and wakes the delivery worker.
type Mailer interface {
	Compose(tmpl mail.Template, to string, data mail.Data, expiresAt time.Time) (*mail.Outgoing, error)
	Wake()
}

// Options are the settings of the service.
type Options struct {
	// Secret keys the identifier hashes of the quarantine.
	Secret string
	// BaseURL starts mailed links.
	BaseURL string
	// FreshAge is how recent a sign-in must be for deletion without a
	// password, and for export.
	FreshAge time.Duration
	// TokenTTL is the life of a mailed deletion link.
	TokenTTL time.Duration
	// Quarantine is how long a deleted account's email and nickname stay
	// reserved.
	Quarantine time.Duration
	// ConfirmByMail sends a confirmation link instead of deleting at once
	// (mail is configured).
	ConfirmByMail bool
}

// Service deletes, exports and suspends accounts.
type Service struct {
	store   Store
	auth    *auth.Service
	players *player.Service
	mailer  Mailer
	opts    Options
	now     func() time.Time
}

// Deps are the services a lifecycle Service works with.
type Deps struct {
	Store   Store
	Auth    *auth.Service
	Players *player.Service
	Mailer  Mailer
}

// New returns the service.
func New(d Deps, opts Options, now func() time.Time) *Service {
	return &Service{store: d.Store, auth: d.Auth, players: d.Players, mailer: d.Mailer, opts: opts, now: now}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// identifierKeys are the quarantine keys of a user's email and nickname.
func (s *Service) identifierKeys(realm account.Realm, email, nickname string) []string {
	return account.QuarantineKeys(s.opts.Secret, realm, email, nickname)
}
