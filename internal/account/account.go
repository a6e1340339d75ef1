// Package account owns user accounts of both realms: who a user is, the
// rules for emails, names, nicknames and passwords, and how passwords are
// hashed and checked. Sessions live in package auth, on top of this one.
package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Realm separates players from administrators: separate accounts, separate
// sessions, separate cookies. The same email may exist once in each realm.
type Realm string

// The realms.
const (
	RealmPlayer Realm = "player"
	RealmAdmin  Realm = "admin"
)

// Valid reports whether r is a known realm.
func (r Realm) Valid() bool { return r == RealmPlayer || r == RealmAdmin }

// ParseRealm returns the realm named s.
func ParseRealm(s string) (Realm, error) {
	r := Realm(s)
	if !r.Valid() {
		return "", platform.Invalid("realm", "must be player or admin")
	}
	return r, nil
}

// Error codes of this package (better-auth's where better-auth has one).
const (
	CodeUserExists           = "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL"
	CodeNicknameTaken        = "NICKNAME_TAKEN"
	CodeInvalidCredentials   = "INVALID_EMAIL_OR_PASSWORD"
	CodeInvalidPassword      = "INVALID_PASSWORD"
	CodePasswordTooShort     = "PASSWORD_TOO_SHORT"
	CodePasswordTooLong      = "PASSWORD_TOO_LONG"
	CodeUserNotFound         = "USER_NOT_FOUND"
	CodeCredentialsNotOnFile = "CREDENTIAL_ACCOUNT_NOT_FOUND"
)

// Errors the store returns for rules the database enforces. They are
// *platform.Error values so that they reach the caller with their code.
var (
	// ErrNotFound: no user matches.
	ErrNotFound = platform.Errorf(platform.KindNotFound, CodeUserNotFound, "User not found")
	// ErrEmailTaken: the realm already has a user with this email.
	ErrEmailTaken = platform.Errorf(platform.KindUnprocessable, CodeUserExists, "User already exists. Use another email.")
	// ErrNicknameTaken: the realm already has this nickname, in any letter case.
	ErrNicknameTaken = platform.Errorf(platform.KindUnprocessable, CodeNicknameTaken, "Nickname is already taken")
	// ErrInvalidCredentials is the one answer for a wrong password and an
	// unknown email alike, so that sign-in does not reveal which accounts exist.
	ErrInvalidCredentials = platform.Errorf(platform.KindUnauthenticated, CodeInvalidCredentials, "Invalid email or password")
	// ErrInvalidPassword: a password check for a known user failed.
	ErrInvalidPassword = platform.Errorf(platform.KindInvalid, CodeInvalidPassword, "Invalid password")
)

// User is an account of either realm. Its JSON form is better-auth's user
// object, plus role for administrators.
type User struct {
	ID            uuid.UUID `json:"id"`
	Realm         Realm     `json:"-"`
	Email         string    `json:"email"`
	Name          string    `json:"name"`
	Nickname      string    `json:"nickname"`
	EmailVerified bool      `json:"emailVerified"`
	Image         *string   `json:"image"`
	Role          string    `json:"role,omitempty"`
	// IsAnonymous marks a guest (better-auth's anonymous plugin); it is
	// left out for everyone else.
	IsAnonymous bool      `json:"isAnonymous,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	// PasswordHash is an argon2id PHC string, or a better-auth scrypt hash
	// carried over from the original service until its next sign-in; ""
	// for an account without a password (guests, provider sign-ins).
	PasswordHash string `json:"-"`
}

// NewUser is the input of a sign-up or an administrator creation.
type NewUser struct {
	Email    string
	Name     string
	Nickname string // required for players; administrators have none
	Password string
	Image    *string
	Role     string // administrators only
}

// Store persists users. Implementations map unique-index violations to
// ErrEmailTaken and ErrNicknameTaken and a missing row to ErrNotFound.
type Store interface {
	InsertUser(ctx context.Context, u *User) error
	UserByID(ctx context.Context, id uuid.UUID) (*User, error)
	UserByEmail(ctx context.Context, realm Realm, email string) (*User, error)
	SetPasswordHash(ctx context.Context, id uuid.UUID, hash string, at time.Time) error
	// Taken reports whether realm already has a user with email, or with
	// a nickname whose key is nicknameKey ("" checks no nickname).
	Taken(ctx context.Context, realm Realm, email, nicknameKey string) (emailTaken, nicknameTaken bool, err error)
}

// Service applies the account rules over a Store.
type Service struct {
	store  Store
	hasher *Hasher
	now    func() time.Time
}

// New returns the account service.
func New(store Store, hasher *Hasher, now func() time.Time) *Service {
	return &Service{store: store, hasher: hasher, now: now}
}

// Now returns the service clock in UTC, truncated to milliseconds so that
// stored and returned times agree on both databases (and match better-auth,
// which keeps milliseconds).
func (s *Service) Now() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// Prepare validates in for realm, hashes its password and returns the user
// ready to insert; it writes nothing. Sign-up uses it to insert the user
// and its first session in one transaction.
func (s *Service) Prepare(ctx context.Context, realm Realm, in NewUser) (*User, error) {
	if !realm.Valid() {
		return nil, fmt.Errorf("prepare user: unknown realm %q", realm)
	}
	u, err := validateNewUser(realm, in)
	if err != nil {
		return nil, err
	}
	// The unique indexes decide at insert time; this early look only spares
	// the hash when the answer is already known.
	hash, err := s.hasher.HashIf(ctx, in.Password, func(ctx context.Context) error {
		key := ""
		if u.Nickname != "" {
			key = NicknameKey(u.Nickname)
		}
		emailTaken, nicknameTaken, err := s.store.Taken(ctx, realm, u.Email, key)
		switch {
		case err != nil:
			return err
		case emailTaken:
			return ErrEmailTaken
		case nicknameTaken:
			return ErrNicknameTaken
		}
		return nil
	})
	if errors.Is(err, ErrEmailTaken) || errors.Is(err, ErrNicknameTaken) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("prepare user: %w", err)
	}
	u.ID = uuid.New()
	u.PasswordHash = hash
	u.CreatedAt = s.Now()
	u.UpdatedAt = u.CreatedAt
	return u, nil
}

// Create validates and inserts a new user.
func (s *Service) Create(ctx context.Context, realm Realm, in NewUser) (*User, error) {
	u, err := s.Prepare(ctx, realm, in)
	if err != nil {
		return nil, err
	}
	if err := s.store.InsertUser(ctx, u); err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// Authenticate checks an email and password in realm and returns the user.
// Every failure is ErrInvalidCredentials, and an unknown email costs a hash
// verification too, so neither the answer nor its timing tells whether the
// account exists. A hash made with other parameters, or carried over in
// better-auth's scrypt format, is replaced by a current argon2id hash.
func (s *Service) Authenticate(ctx context.Context, realm Realm, email, password string) (*User, error) {
	if err := checkPasswordMax(password); err != nil {
		return nil, err
	}
	email = NormalizeEmail(email)
	if err := validateEmail(email); err != nil {
		return nil, err
	}
	u, err := s.store.UserByEmail(ctx, realm, email)
	if errors.Is(err, ErrNotFound) {
		if err := s.hasher.BurnVerify(ctx, password); err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		return nil, ErrInvalidCredentials
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if u.PasswordHash == "" { // no password: costs a hash like an unknown email
		if err := s.hasher.BurnVerify(ctx, password); err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		return nil, ErrInvalidCredentials
	}
	ok, stale, err := s.hasher.Verify(ctx, u.PasswordHash, password)
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if !ok {
		return nil, ErrInvalidCredentials
	}
	if stale {
		if err := s.rehash(ctx, u, password); err != nil {
			return nil, err
		}
	}
	return u, nil
}

func (s *Service) rehash(ctx context.Context, u *User, password string) error {
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return fmt.Errorf("rehash password: %w", err)
	}
	now := s.Now()
	if err := s.store.SetPasswordHash(ctx, u.ID, hash, now); err != nil {
		return fmt.Errorf("rehash password: %w", err)
	}
	u.PasswordHash = hash
	u.UpdatedAt = now
	return nil
}

// VerifyPassword checks password against u's stored hash and returns
// ErrInvalidPassword when it does not match. It writes nothing.
func (s *Service) VerifyPassword(ctx context.Context, u *User, password string) error {
	if err := checkPasswordMax(password); err != nil {
		return err
	}
	if u.PasswordHash == "" {
		return ErrInvalidPassword
	}
	ok, _, err := s.hasher.Verify(ctx, u.PasswordHash, password)
	if err != nil {
		return fmt.Errorf("verify password: %w", err)
	}
	if !ok {
		return ErrInvalidPassword
	}
	return nil
}

// HashPassword checks a new password against the length rules and returns
// its argon2id hash, for callers that store it themselves (pending password
// changes, password resets).
func (s *Service) HashPassword(ctx context.Context, password string) (string, error) {
	if err := CheckPassword(password); err != nil {
		return "", err
	}
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return hash, nil
}

// ByID returns the user with id.
func (s *Service) ByID(ctx context.Context, id uuid.UUID) (*User, error) {
	u, err := s.store.UserByID(ctx, id)
	if err != nil {
		return nil, wrapLookup(err)
	}
	return u, nil
}

// ByEmail returns the user of realm with the (normalised) email.
func (s *Service) ByEmail(ctx context.Context, realm Realm, email string) (*User, error) {
	u, err := s.store.UserByEmail(ctx, realm, NormalizeEmail(email))
	if err != nil {
		return nil, wrapLookup(err)
	}
	return u, nil
}

// Find resolves what an operator typed: a user id, or an email in realm.
func (s *Service) Find(ctx context.Context, realm Realm, emailOrID string) (*User, error) {
	if id, err := uuid.Parse(emailOrID); err == nil {
		u, err := s.ByID(ctx, id)
		if err != nil {
			return nil, err
		}
		if u.Realm != realm {
			return nil, ErrNotFound
		}
		return u, nil
	}
	return s.ByEmail(ctx, realm, emailOrID)
}

func wrapLookup(err error) error {
	if errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("look up user: %w", err)
}
