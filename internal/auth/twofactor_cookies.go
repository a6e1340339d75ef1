package auth

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
)

// Cookie names of the second factor, after the realm's prefix, as
// better-auth's twoFactor plugin names them.
const (
	twoFactorCookie   = ".two_factor"
	trustDeviceCookie = ".trust_device"
)

// TwoFactorCookie carries a sign-in challenge's token for its ten minutes.
func (c *Cookies) TwoFactorCookie(realm account.Realm, token string) *http.Cookie {
	return c.cookie(c.name(realm, twoFactorCookie), c.Sign(token), int(challengeTTL/time.Second))
}

// ClearTwoFactorCookie removes the challenge cookie once it is spent.
func (c *Cookies) ClearTwoFactorCookie(realm account.Realm) *http.Cookie {
	return c.cookie(c.name(realm, twoFactorCookie), "", -1)
}

// TwoFactorToken returns the verified challenge token r carries.
func (c *Cookies) TwoFactorToken(realm account.Realm, r *http.Request) string {
	return c.signedValue(r, twoFactorCookie, realm)
}

// TrustDevice returns the verified trust-device value r carries.
func (c *Cookies) TrustDevice(realm account.Realm, r *http.Request) string {
	return c.signedValue(r, trustDeviceCookie, realm)
}

func (c *Cookies) signedValue(r *http.Request, suffix string, realm account.Realm) string {
	for _, name := range []string{securePrefix + c.prefixes[realm] + suffix, c.prefixes[realm] + suffix} {
		if ck, err := r.Cookie(name); err == nil {
			if v, ok := c.Verify(ck.Value); ok {
				return v
			}
		}
	}
	return ""
}

// TrustDeviceCookie returns the cookie that spares this browser the
// second factor of userID for thirty days. Its value names the enrolment
// it was issued under, so disabling the factor voids every such cookie.
func (s *Service) TrustDeviceCookie(ctx context.Context, p *Principal) (*http.Cookie, error) {
	_, tf, err := s.secondFactors(ctx, p.User.ID)
	if err != nil || tf == nil {
		return nil, err
	}
	expires := s.clock().Add(trustDeviceTTL)
	value := p.User.ID.String() + "!" + strconv.FormatInt(expires.Unix(), 10) + "!" + strconv.FormatInt(tf.CreatedAt.UnixMilli(), 10)
	return s.cookies.cookie(s.cookies.name(p.Realm, trustDeviceCookie), s.cookies.Sign(value), int(trustDeviceTTL/time.Second)), nil
}

// trusted reports whether a verified trust-device value vouches for u's
// current enrolment.
func (s *Service) trusted(u *account.User, tf *TwoFactor, value string) bool {
	if value == "" || tf == nil {
		return false
	}
	parts := strings.Split(value, "!")
	if len(parts) != 3 {
		return false
	}
	id, err := uuid.Parse(parts[0])
	expires, err2 := strconv.ParseInt(parts[1], 10, 64)
	epoch, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || err2 != nil || err3 != nil {
		return false
	}
	return id == u.ID && s.clock().Unix() < expires && epoch == tf.CreatedAt.UnixMilli()
}

// passkeyCookie is @better-auth/passkey's ceremony cookie.
const passkeyCookie = ".better-auth-passkey"

// PasskeyCookie carries a WebAuthn ceremony's token for its five minutes.
func (c *Cookies) PasskeyCookie(realm account.Realm, token string) *http.Cookie {
	return c.cookie(c.name(realm, passkeyCookie), c.Sign(token), int(ceremonyTTL/time.Second))
}

// PasskeyToken returns the verified ceremony token r carries.
func (c *Cookies) PasskeyToken(realm account.Realm, r *http.Request) string {
	return c.signedValue(r, passkeyCookie, realm)
}
