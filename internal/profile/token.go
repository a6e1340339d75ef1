package profile

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/towerdefence/platformctl/internal/account"
)

// tokenBytes is the entropy of a confirmation token: 256 bits, so guessing
// is hopeless and no attempt counter is needed.
const tokenBytes = 32

// tokenKeyLabel separates the token-hash key from every other use of the
// secret.
const tokenKeyLabel = "platformctl profile token v1"

func tokenKey(secret string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(tokenKeyLabel))
	return mac.Sum(nil)
}

// newToken returns a fresh token (64 lower-case hex characters) and the
// hash that is stored in its place.
func (s *Service) newToken() (token, hash string, err error) {
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(raw)
	return token, s.hashToken(token), nil
}

// hashToken is HMAC-SHA256 keyed by the secret: someone holding only a
// database dump can neither confirm a change nor test a guess offline.
func (s *Service) hashToken(token string) string {
	mac := hmac.New(sha256.New, s.tokenKey)
	mac.Write([]byte(token))
	return hex.EncodeToString(mac.Sum(nil))
}

// wellFormedToken reports whether token is 64 lower-case hex characters;
// anything else is refused before it reaches the database.
func wellFormedToken(token string) bool {
	if len(token) != 2*tokenBytes {
		return false
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// maxCallbackLen bounds a callback URL.
const maxCallbackLen = 2048

// checkCallback accepts only an absolute http(s) URL, without credentials,
// on a trusted origin (scheme, host and port exactly), and returns it
// normalised. Relative paths are refused too: the link goes into an email,
// where there is no page for it to be relative to.
func (s *Service) checkCallback(raw string) (string, error) {
	if len(raw) > maxCallbackLen {
		return "", ErrInvalidCallbackURL
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return "", ErrInvalidCallbackURL
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return "", ErrInvalidCallbackURL
	}
	if scheme := strings.ToLower(u.Scheme); scheme != "http" && scheme != "https" {
		return "", ErrInvalidCallbackURL
	}
	if !s.origins.Trusted(raw) {
		return "", ErrInvalidCallbackURL
	}
	return u.String(), nil
}

// confirmationLink is the callback URL with token=<hex> in its query (an
// earlier token parameter is replaced). The page it opens POSTs the token
// to confirm-change; opening the link consumes nothing, so mail scanners
// that follow links cannot confirm a change.
func confirmationLink(callback, token string) string {
	u, err := url.Parse(callback)
	if err != nil {
		// checkCallback accepted it, so this cannot happen.
		return callback
	}
	q := u.Query()
	q.Set("token", token)
	u.RawQuery = q.Encode()
	return u.String()
}

// fingerprint hashes the fields a change of type t replaces. A change
// whose base no longer matches at confirmation would undo a newer change,
// so it is refused.
func fingerprint(t Type, u *account.User) string {
	var parts []string
	switch t {
	case TypeProfile:
		parts = []string{u.Name, u.Nickname}
	case TypeEmail:
		parts = []string{u.Email}
	case TypePassword:
		parts = []string{u.PasswordHash}
	}
	sum := sha256.Sum256([]byte(string(t) + "\x00" + strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}
