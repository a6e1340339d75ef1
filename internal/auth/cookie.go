package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
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
	// readNames are the session cookie names read per realm: with and
	// without __Secure-, as better-auth reads both.
	readNames map[account.Realm][2]string
	ttl       time.Duration
	// macs reuses keyed HMAC states: every signed-in request verifies one.
	macs sync.Pool
}

// CookieOptions are the cookie codec's settings.
type CookieOptions struct {
	// Secret keys the cookies' signatures.
	Secret string
	// Secure adds the __Secure- prefix and the Secure attribute (an https
	// base URL).
	Secure bool
	// PlayerPrefix and AdminPrefix start the cookie names of each realm.
	PlayerPrefix, AdminPrefix string
	// TTL is the Max-Age of a remembered session.
	TTL time.Duration
}

// NewCookies returns the cookie codec.
func NewCookies(opts CookieOptions) *Cookies {
	c := &Cookies{
		secret:   []byte(opts.Secret),
		secure:   opts.Secure,
		prefixes: map[account.Realm]string{account.RealmPlayer: opts.PlayerPrefix, account.RealmAdmin: opts.AdminPrefix},
		ttl:      opts.TTL,
	}
	c.readNames = map[account.Realm][2]string{}
	for realm, prefix := range c.prefixes {
		c.readNames[realm] = [2]string{securePrefix + prefix + sessionTokenCookie, prefix + sessionTokenCookie}
	}
	c.macs.New = func() any { return hmac.New(sha256.New, c.secret) }
	return c
}

// mac appends the HMAC-SHA256 of msg under the secret to dst.
func (c *Cookies) mac(dst []byte, msg string) []byte {
	m := c.macs.Get().(hash.Hash)
	m.Reset()
	io.WriteString(m, msg) //nolint:errcheck // hashes do not fail
	dst = m.Sum(dst)
	c.macs.Put(m)
	return dst
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
	var sum [sha256.Size]byte
	return url.QueryEscape(token + "." + base64.StdEncoding.EncodeToString(c.mac(sum[:0], token)))
}

// Verify returns the token inside a signed cookie value, and false when the
// value is malformed or its signature does not match.
func (c *Cookies) Verify(value string) (string, bool) {
	var buf [maxCookieValue]byte
	raw, ok := unescape(buf[:0], value)
	if !ok {
		return "", false
	}
	dot := bytes.LastIndexByte(raw, '.')
	if dot <= 0 {
		return "", false
	}
	token, sig := raw[:dot], raw[dot+1:]
	if len(sig) != signatureLen || sig[signatureLen-1] != '=' {
		return "", false
	}
	var got [sha256.Size + 2]byte
	n, err := base64.StdEncoding.Decode(got[:], sig)
	if err != nil || n != sha256.Size {
		return "", false
	}
	var want [sha256.Size]byte
	if !hmac.Equal(c.mac(want[:0], string(token)), got[:n]) {
		return "", false
	}
	return string(token), true
}

// maxCookieValue bounds the cookie values Verify reads; a session cookie
// is 43 + 1 + 44 bytes before escaping.
const maxCookieValue = 512

// unescape percent-decodes s (decodeURIComponent: '+' stays '+') into dst,
// refusing malformed escapes and values longer than maxCookieValue.
func unescape(dst []byte, s string) ([]byte, bool) {
	if len(s) > maxCookieValue {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			dst = append(dst, s[i])
			continue
		}
		if i+2 >= len(s) {
			return nil, false
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return nil, false
		}
		dst = append(dst, hi<<4|lo)
		i += 2
	}
	return dst, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// TokenFromRequest returns the verified session token of realm carried by
// r, accepting the cookie with and without the __Secure- prefix as
// better-auth does.
//
// It scans the Cookie headers itself rather than through r.Cookie, which
// parses every cookie of the request into a new slice on each call.
func (c *Cookies) TokenFromRequest(realm account.Realm, r *http.Request) (string, bool) {
	names := c.readNames[realm]
	for _, line := range r.Header["Cookie"] {
		for len(line) > 0 {
			var pair string
			pair, line, _ = strings.Cut(line, ";")
			name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || (name != names[0] && name != names[1]) {
				continue
			}
			if len(value) > 1 && value[0] == '"' && value[len(value)-1] == '"' {
				value = value[1 : len(value)-1]
			}
			if token, ok := c.Verify(value); ok {
				return token, true
			}
		}
	}
	return "", false
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
