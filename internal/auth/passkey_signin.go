package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
)

// errMalformedResponse: the browser's WebAuthn response does not parse.
var errMalformedResponse = platform.Invalid("response", "is not a WebAuthn response")

// ParseRegistrationResponse parses a browser's registration response
// (RegistrationResponseJSON); anything malformed is a 400, never a panic.
func ParseRegistrationResponse(raw []byte) (*protocol.ParsedCredentialCreationData, error) {
	if len(raw) == 0 || len(raw) > maxPasskeyResponse {
		return nil, errMalformedResponse
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(raw)
	if err != nil {
		return nil, errMalformedResponse
	}
	return parsed, nil
}

// ParseAuthenticationResponse parses a browser's authentication response
// (AuthenticationResponseJSON); anything malformed is a 400.
func ParseAuthenticationResponse(raw []byte) (*protocol.ParsedCredentialAssertionData, error) {
	if len(raw) == 0 || len(raw) > maxPasskeyResponse {
		return nil, errMalformedResponse
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(raw)
	if err != nil {
		return nil, errMalformedResponse
	}
	return parsed, nil
}

// FinishPasskeySignIn verifies a discoverable sign-in and lets the user in
// through OpenSessionAfterFirstFactor. A signature counter that did not
// move forward means a cloned authenticator: the sign-in is refused and
// audited.
func (s *Service) FinishPasskeySignIn(ctx context.Context, realm account.Realm, token string, response []byte, client Client, trustDevice string) (*Principal, error) {
	if s.webauthn == nil {
		return nil, errNoPasskeys
	}
	session, err := s.takeCeremony(ctx, token, ceremonyAuthentication, uuid.Nil)
	if err != nil {
		return nil, err
	}
	parsed, err := ParseAuthenticationResponse(response)
	if err != nil {
		return nil, err
	}
	var (
		pk *Passkey
		u  *account.User
	)
	lookup := func(rawID, _ []byte) (webauthn.User, error) {
		var err error
		if pk, err = s.passkeys.PasskeyByCredentialID(ctx, rawID); err != nil {
			return nil, err
		}
		var cred webauthn.Credential
		if err := json.Unmarshal(pk.Record, &cred); err != nil {
			return nil, fmt.Errorf("decode passkey: %w", err)
		}
		if u, err = s.accounts.ByID(ctx, pk.UserID); err != nil {
			return nil, err
		}
		return webauthnUser{u: u, creds: []webauthn.Credential{cred}}, nil
	}
	_, cred, err := s.webauthn.ValidatePasskeyLogin(lookup, *session, parsed)
	if pk == nil && err != nil {
		return nil, errPasskeyNotFound
	}
	if err != nil {
		return nil, errAuthFailed
	}
	if u.Realm != realm { // a passkey of the other realm opens nothing here
		return nil, errPasskeyNotFound
	}
	if cred.Authenticator.CloneWarning {
		return nil, s.refuseClonedPasskey(ctx, pk, cred.Authenticator.SignCount, parsed.Response.AuthenticatorData.Counter)
	}
	record, err := json.Marshal(cred)
	if err != nil {
		return nil, fmt.Errorf("encode passkey: %w", err)
	}
	used, err := s.passkeys.UsePasskey(ctx, pk.ID, pk.Counter, cred.Authenticator.SignCount, record)
	if err != nil {
		return nil, fmt.Errorf("store passkey use: %w", err)
	}
	if !used { // another sign-in with the same counter won the race
		return nil, errAuthFailed
	}
	return s.OpenSessionAfterFirstFactor(ctx, u, true, client, trustDevice)
}

// refuseClonedPasskey records a signature counter that went backwards and
// answers the refusal.
func (s *Service) refuseClonedPasskey(ctx context.Context, pk *Passkey, stored, got uint32) error {
	e := s.auditEntry("system", ActionPasskeyCounterWentBack, pk.UserID.String(), "signature counter did not increase",
		map[string]string{"passkey": pk.ID.String(), "stored": strconv.FormatUint(uint64(stored), 10), "presented": strconv.FormatUint(uint64(got), 10)})
	if err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error { return tx.InsertAudit(ctx, e) }); err != nil {
		return fmt.Errorf("audit passkey counter: %w", err)
	}
	return errAuthFailed
}

// startCeremony stores a ceremony's session data and returns its token.
func (s *Service) startCeremony(ctx context.Context, kind string, userID uuid.UUID, session *webauthn.SessionData) (string, error) {
	raw, err := json.Marshal(session)
	if err != nil {
		return "", fmt.Errorf("encode ceremony: %w", err)
	}
	token, hash, err := NewToken()
	if err != nil {
		return "", err
	}
	c := &Ceremony{TokenHash: hash, Kind: kind, UserID: userID, Session: raw, ExpiresAt: s.clock().Add(ceremonyTTL)}
	if err := s.passkeys.InsertCeremony(ctx, c); err != nil {
		return "", fmt.Errorf("store ceremony: %w", err)
	}
	return token, nil
}

// takeCeremony consumes the ceremony the cookie names: each challenge is
// answered once, by the user it was issued to, within its time.
func (s *Service) takeCeremony(ctx context.Context, token, kind string, userID uuid.UUID) (*webauthn.SessionData, error) {
	if token == "" || len(token) > 256 {
		return nil, errChallengeNotFound
	}
	c, err := s.passkeys.TakeCeremony(ctx, HashToken(token))
	if errors.Is(err, ErrCeremonyNotFound) {
		return nil, errChallengeNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("take ceremony: %w", err)
	}
	if c.Kind != kind || c.UserID != userID || !s.clock().Before(c.ExpiresAt) {
		return nil, errChallengeNotFound
	}
	var session webauthn.SessionData
	if err := json.Unmarshal(c.Session, &session); err != nil {
		return nil, fmt.Errorf("decode ceremony: %w", err)
	}
	return &session, nil
}

// ListPasskeys returns the principal's passkeys.
func (s *Service) ListPasskeys(ctx context.Context, p *Principal) ([]Passkey, error) {
	list, err := s.passkeys.Passkeys(ctx, p.User.ID, maxPasskeys)
	if err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	return list, nil
}

// RenamePasskey names one of the principal's passkeys.
func (s *Service) RenamePasskey(ctx context.Context, p *Principal, id uuid.UUID, name string) (*Passkey, error) {
	if len(name) > 100 {
		return nil, platform.Invalid("name", "must be at most 100 characters")
	}
	pk, err := s.passkeys.RenamePasskey(ctx, p.User.ID, id, name)
	if errors.Is(err, ErrPasskeyNotFound) {
		return nil, platform.Errorf(platform.KindNotFound, CodePasskeyNotFound, "Passkey not found")
	}
	return pk, err
}

// DeletePasskey removes one of the principal's passkeys; it needs a fresh
// session, and the owner is mailed.
func (s *Service) DeletePasskey(ctx context.Context, p *Principal, id uuid.UUID) error {
	if err := s.RequireFresh(p); err != nil {
		return err
	}
	removed, err := s.passkeys.DeletePasskey(ctx, p.User.ID, id)
	if err != nil {
		return fmt.Errorf("delete passkey: %w", err)
	}
	if !removed {
		return platform.Errorf(platform.KindNotFound, CodePasskeyNotFound, "Passkey not found")
	}
	return s.notifyFactor(ctx, p.User, ActionPasskeyRemoved, "A passkey was removed from your account.")
}
