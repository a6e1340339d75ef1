package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
)

// Cookie names after the realm's prefix, as better-auth names them.
const (
	sessionTokenCookie = ".session_token"
	sessionDataCookie  = ".session_data"
	dontRememberCookie = ".dont_remember"
	securePrefix       = "__Secure-"
	// signatureLen is the length of a padded base64 HMAC-SHA256.
	signatureLen = 44
)

// Cookies writes and reads the session cookies of both realms exactly as
// better-auth does, so that cookies issued by the original service stay
// valid: value = URL-encode(token + "." + base64(HMAC-SHA256(secret, token))).
type Cookies struct {
	secret   []byte
	secure   bool
	prefixes map[account.Realm]string
	ttl      time.Duration
}

// NewCookies returns the cookie codec. secure adds the __Secure- prefix and
// the Secure attribute (an https base URL); ttl is the Max-Age of a
// remembered session.
func NewCookies(secret string, secure bool, playerPrefix, adminPrefix string, ttl time.Duration) *Cookies {
	return &Cookies{
		secret:   []byte(secret),
		secure:   secure,
		prefixes: map[account.Realm]string{account.RealmPlayer: playerPrefix, account.RealmAdmin: adminPrefix},
		ttl:      ttl,
	}
}

func (c *Cookies) name(realm account.Realm, suffix string) string {
	if c.secure {
		return securePrefix + c.prefixes[realm] + suffix
	}
	return c.prefixes[realm] + suffix
}

// SessionCookieName returns the name of realm's session cookie.
func (c *Cookies) SessionCookieName(realm account.Realm) string {
	return c.name(realm, sessionTokenCookie)
}

// Sign returns the signed, URL-encoded cookie value of token.
func (c *Cookies) Sign(token string) string {
	mac := hmac.New(sha256.New, c.secret)
	mac.Write([]byte(token))
	return url.QueryEscape(token + "." + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// Verify returns the token inside a signed cookie value, and false when the
// value is malformed or its signature does not match.
func (c *Cookies) Verify(value string) (string, bool) {
	if strings.IndexByte(value, '%') >= 0 {
		v, err := url.PathUnescape(value)
		if err != nil {
			return "", false
		}
		value = v
	}
	dot := strings.LastIndexByte(value, '.')
	if dot <= 0 {
		return "", false
	}
	token, sig := value[:dot], value[dot+1:]
	if len(sig) != signatureLen || sig[signatureLen-1] != '=' {
		return "", false
	}
	var got [sha256.Size + 2]byte
	n, err := base64.StdEncoding.Decode(got[:], []byte(sig))
	if err != nil || n != sha256.Size {
		return "", false
	}
	mac := hmac.New(sha256.New, c.secret)
	mac.Write([]byte(token))
	if !hmac.Equal(mac.Sum(nil), got[:n]) {
		return "", false
	}
	return token, true
}

// TokenFromRequest returns the verified session token of realm carried by
// r, accepting the cookie with and without the __Secure- prefix as
// better-auth does.
func (c *Cookies) TokenFromRequest(realm account.Realm, r *http.Request) (string, bool) {
	base := c.prefixes[realm] + sessionTokenCookie
	for _, name := range [2]string{securePrefix + base, base} {
		ck, err := r.Cookie(name)
		if err != nil || ck.Value == "" {
			continue
		}
		if token, ok := c.Verify(ck.Value); ok {
			return token, true
		}
	}
	return "", false
}

// HasSessionCookie reports whether r carries any cookie of realm's session,
// valid or not.
func (c *Cookies) HasSessionCookie(realm account.Realm, r *http.Request) bool {
	base := c.prefixes[realm] + sessionTokenCookie
	for _, name := range [2]string{securePrefix + base, base} {
		if _, err := r.Cookie(name); err == nil {
			return true
		}
	}
	return false
}

func (c *Cookies) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode,
	}
}

// SessionCookies returns the cookies that carry a new session. A remembered
// session's cookie lives for the session TTL; otherwise it is a
// browser-session cookie, and a signed dont_remember cookie marks it so.
func (c *Cookies) SessionCookies(realm account.Realm, token string, remember bool) []*http.Cookie {
	if remember {
		return []*http.Cookie{c.cookie(c.name(realm, sessionTokenCookie), c.Sign(token), int(c.ttl/time.Second))}
	}
	return []*http.Cookie{
		c.cookie(c.name(realm, sessionTokenCookie), c.Sign(token), 0),
		c.cookie(c.name(realm, dontRememberCookie), c.Sign("true"), 0),
	}
}

// ClearCookies returns the cookies that remove realm's session from the
// browser, in better-auth's order.
func (c *Cookies) ClearCookies(realm account.Realm) []*http.Cookie {
	return []*http.Cookie{
		c.cookie(c.name(realm, sessionTokenCookie), "", -1),
		c.cookie(c.name(realm, sessionDataCookie), "", -1),
		c.cookie(c.name(realm, dontRememberCookie), "", -1),
	}
}
