package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Error codes of passkeys (@better-auth/passkey's).
const (
	CodeChallengeNotFound          = "CHALLENGE_NOT_FOUND"
	CodeFailedToVerifyRegistration = "FAILED_TO_VERIFY_REGISTRATION"
	CodePasskeyNotFound            = "PASSKEY_NOT_FOUND"
	CodeAuthenticationFailed       = "AUTHENTICATION_FAILED"
	CodeTooManyPasskeys            = "TOO_MANY_PASSKEYS"
	CodePasskeysNotConfigured      = "PASSKEYS_NOT_CONFIGURED"
	ActionPasskeyAdded             = "passkey.added"
	ActionPasskeyRemoved           = "passkey.removed"
	ActionPasskeyCounterWentBack   = "passkey.counter_regressed"
	ceremonyRegistration           = "registration"
	ceremonyAuthentication         = "authentication"
	ceremonyTTL                    = 5 * time.Minute
	maxPasskeys                    = 20
	maxPasskeyResponse             = 64 << 10
)

var (
	errChallengeNotFound = platform.Errorf(platform.KindInvalid, CodeChallengeNotFound, "Challenge not found")
	errPasskeyNotFound   = platform.Errorf(platform.KindUnauthenticated, CodePasskeyNotFound, "Passkey not found")
	errAuthFailed        = platform.Errorf(platform.KindUnauthenticated, CodeAuthenticationFailed, "Authentication failed")
	errNoPasskeys        = platform.Errorf(platform.KindNotFound, CodePasskeysNotConfigured, "Passkeys are not configured")
	// ErrPasskeyNotFound is what a FactorStore returns for an unknown passkey.
	ErrPasskeyNotFound = errors.New("passkey not found")
	// ErrCeremonyNotFound is what a FactorStore returns for an unknown ceremony.
	ErrCeremonyNotFound = errors.New("passkey ceremony not found")
)

// Passkey is a registered WebAuthn credential, shown as
// @better-auth/passkey shows it. Record is the verified credential as
// stored (JSON of webauthn.Credential).
type Passkey struct {
	ID           uuid.UUID `json:"id"`
	Name         string    `json:"name"`
	UserID       uuid.UUID `json:"userId"`
	CredentialID string    `json:"credentialID"`
	PublicKey    string    `json:"publicKey"`
	Counter      uint32    `json:"counter"`
	DeviceType   string    `json:"deviceType"`
	BackedUp     bool      `json:"backedUp"`
	Transports   string    `json:"transports"`
	CreatedAt    time.Time `json:"createdAt"`
	AAGUID       string    `json:"aaguid"`
	Record       []byte    `json:"-"`
}

// Ceremony is a WebAuthn registration or authentication under way.
type Ceremony struct {
	TokenHash TokenHash
	Kind      string
	UserID    uuid.UUID // uuid.Nil for a discoverable sign-in
	Session   []byte    // webauthn.SessionData as JSON
	ExpiresAt time.Time
}

// PasskeyStore persists passkeys and their ceremonies.
type PasskeyStore interface {
	InsertPasskey(ctx context.Context, pk *Passkey) error
	// Passkeys returns at most limit passkeys of userID, oldest first.
	Passkeys(ctx context.Context, userID uuid.UUID, limit int) ([]Passkey, error)
	PasskeyByCredentialID(ctx context.Context, credentialID []byte) (*Passkey, error)
	// UsePasskey stores the counter and record after a sign-in if the
	// counter still is old; of concurrent sign-ins one gets true.
	UsePasskey(ctx context.Context, id uuid.UUID, old, counter uint32, record []byte) (bool, error)
	RenamePasskey(ctx context.Context, userID, id uuid.UUID, name string) (*Passkey, error)
	DeletePasskey(ctx context.Context, userID, id uuid.UUID) (bool, error)
	// DeletePasskeys deletes every passkey of userID and says how many.
	DeletePasskeys(ctx context.Context, userID uuid.UUID) (int, error)
	InsertCeremony(ctx context.Context, c *Ceremony) error
	// TakeCeremony deletes and returns the ceremony, expired or not.
	TakeCeremony(ctx context.Context, tokenHash TokenHash) (*Ceremony, error)
}

// webauthnUser shows an account to the WebAuthn library. Its handle is
// the account id: stable, and nothing a user could read anything from.
type webauthnUser struct {
	u     *account.User
	creds []webauthn.Credential
}

func (w webauthnUser) WebAuthnID() []byte   { return w.u.ID[:] }
func (w webauthnUser) WebAuthnName() string { return w.u.Email }
func (w webauthnUser) WebAuthnDisplayName() string {
	if w.u.Nickname != "" {
		return w.u.Nickname
	}
	return w.u.Name
}
func (w webauthnUser) WebAuthnCredentials() []webauthn.Credential { return w.creds }

// PasskeyOptions are WebAuthn options as JSON for the browser, and the
// token of the ceremony for its cookie.
type PasskeyOptions struct {
	Options any
	Token   string
}

// BeginPasskeyRegistration starts adding a passkey; it needs a fresh
// session (re-authentication before adding a sign-in method).
func (s *Service) BeginPasskeyRegistration(ctx context.Context, p *Principal) (*PasskeyOptions, error) {
	if s.webauthn == nil {
		return nil, errNoPasskeys
	}
	if err := s.RequireFresh(p); err != nil {
		return nil, err
	}
	existing, err := s.passkeys.Passkeys(ctx, p.User.ID, maxPasskeys)
	if err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	if len(existing) >= maxPasskeys {
		return nil, platform.Errorf(platform.KindUnprocessable, CodeTooManyPasskeys, "At most %d passkeys per account", maxPasskeys)
	}
	exclude := make([]protocol.CredentialDescriptor, 0, len(existing))
	for _, pk := range existing {
		id, _ := base64.RawURLEncoding.DecodeString(pk.CredentialID)
		exclude = append(exclude, protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: id})
	}
	creation, session, err := s.webauthn.BeginRegistration(webauthnUser{u: p.User},
		webauthn.WithExclusions(exclude), webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementPreferred),
		webauthn.WithConveyancePreference(protocol.PreferNoAttestation))
	if err != nil {
		return nil, fmt.Errorf("begin passkey registration: %w", err)
	}
	token, err := s.startCeremony(ctx, ceremonyRegistration, p.User.ID, session)
	if err != nil {
		return nil, err
	}
	return &PasskeyOptions{Options: creation.Response, Token: token}, nil
}

// FinishPasskeyRegistration verifies the browser's response and stores
// the passkey; the account's owner is mailed.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, p *Principal, token string, response []byte, name string) (*Passkey, error) {
	if s.webauthn == nil {
		return nil, errNoPasskeys
	}
	session, err := s.takeCeremony(ctx, token, ceremonyRegistration, p.User.ID)
	if err != nil {
		return nil, err
	}
	parsed, err := ParseRegistrationResponse(response)
	if err != nil {
		return nil, err
	}
	cred, err := s.webauthn.CreateCredential(webauthnUser{u: p.User}, *session, parsed)
	if err != nil {
		return nil, platform.Errorf(platform.KindInvalid, CodeFailedToVerifyRegistration, "Failed to verify registration")
	}
	pk, err := newPasskey(p.User.ID, cred, strings.TrimSpace(name), s.clock())
	if err != nil {
		return nil, err
	}
	if err := s.passkeys.InsertPasskey(ctx, pk); err != nil {
		return nil, fmt.Errorf("store passkey: %w", err)
	}
	return pk, s.notifyFactor(ctx, p.User, ActionPasskeyAdded, "A passkey was added to your account"+namedAs(pk.Name)+".")
}

func namedAs(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// newPasskey makes the stored form of a verified credential.
func newPasskey(userID uuid.UUID, cred *webauthn.Credential, name string, now time.Time) (*Passkey, error) {
	if len(name) > 100 {
		return nil, platform.Invalid("name", "must be at most 100 characters")
	}
	record, err := json.Marshal(cred)
	if err != nil {
		return nil, fmt.Errorf("encode passkey: %w", err)
	}
	device := "singleDevice"
	if cred.Flags.BackupEligible {
		device = "multiDevice"
	}
	transports := make([]string, len(cred.Transport))
	for i, t := range cred.Transport {
		transports[i] = string(t)
	}
	aaguid := ""
	if id, err := uuid.FromBytes(cred.Authenticator.AAGUID); err == nil {
		aaguid = id.String()
	}
	return &Passkey{
		ID: uuid.New(), Name: name, UserID: userID,
		CredentialID: base64.RawURLEncoding.EncodeToString(cred.ID), PublicKey: base64.StdEncoding.EncodeToString(cred.PublicKey),
		Counter: cred.Authenticator.SignCount, DeviceType: device, BackedUp: cred.Flags.BackupState,
		Transports: strings.Join(transports, ","), CreatedAt: now, AAGUID: aaguid, Record: record,
	}, nil
}

// BeginPasskeySignIn starts a discoverable sign-in: the browser offers
// whichever passkey of this site the user picks.
func (s *Service) BeginPasskeySignIn(ctx context.Context) (*PasskeyOptions, error) {
	if s.webauthn == nil {
		return nil, errNoPasskeys
	}
	assertion, session, err := s.webauthn.BeginDiscoverableLogin()
	if err != nil {
		return nil, fmt.Errorf("begin passkey sign-in: %w", err)
	}
	token, err := s.startCeremony(ctx, ceremonyAuthentication, uuid.Nil, session)
	if err != nil {
		return nil, err
	}
	return &PasskeyOptions{Options: assertion.Response, Token: token}, nil
}
