package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
)

func TestCookieSignatureMatchesBetterAuth(t *testing.T) {
	raw, err := os.ReadFile("testdata/better-auth-cookie.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vector struct{ Secret, Token, Cookie string }
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	v := file.Vector
	c := NewCookies(CookieOptions{Secret: v.Secret, Secure: false, PlayerPrefix: "better-auth", AdminPrefix: "platform-admin", TTL: time.Hour})
	if got := c.Sign(v.Token); got != v.Cookie {
		t.Fatalf("Sign(%q) = %q, want better-auth's %q", v.Token, got, v.Cookie)
	}
	token, ok := c.Verify(v.Cookie)
	if !ok || token != v.Token {
		t.Fatalf("Verify(better-auth cookie) = %q, %v", token, ok)
	}
	other := NewCookies(CookieOptions{Secret: v.Secret + "x", Secure: false, PlayerPrefix: "better-auth", AdminPrefix: "platform-admin", TTL: time.Hour})
	if _, ok := other.Verify(v.Cookie); ok {
		t.Fatal("a cookie signed with another secret verified")
	}
}

func TestCookieVerifyRejectsTampering(t *testing.T) {
	c := NewCookies(CookieOptions{Secret: "0123456789abcdef0123456789abcdef", Secure: false, PlayerPrefix: "better-auth", AdminPrefix: "platform-admin", TTL: time.Hour})
	good := c.Sign("tokenvalue")
	decoded, _ := url.QueryUnescape(good)
	dot := strings.LastIndexByte(decoded, '.')
	for _, bad := range []string{
		"",
		"tokenvalue",
		"tokenvalue.",
		".sig",
		"othertoken" + decoded[dot:],
		decoded[:dot] + "." + strings.Repeat("A", 43) + "=",
		decoded[:len(decoded)-1],
		decoded + "=",
		"%zz",
		decoded[:dot] + "." + base64.StdEncoding.EncodeToString(make([]byte, 33))[:44],
	} {
		if tok, ok := c.Verify(bad); ok {
			t.Errorf("Verify(%q) accepted token %q", bad, tok)
		}
	}
	// Both the URL-encoded and the decoded form are accepted.
	for _, ok := range []string{good, decoded} {
		if tok, verified := c.Verify(ok); !verified || tok != "tokenvalue" {
			t.Errorf("Verify(%q) = %q, %v", ok, tok, verified)
		}
	}
}

func TestSessionCookieAttributes(t *testing.T) {
	secret := "0123456789abcdef0123456789abcdef"
	for _, tt := range []struct {
		secure   bool
		realm    account.Realm
		remember bool
		names    []string
	}{
		{false, account.RealmPlayer, true, []string{"better-auth.session_token"}},
		{false, account.RealmPlayer, false, []string{"better-auth.session_token", "better-auth.dont_remember"}},
		{true, account.RealmPlayer, true, []string{"__Secure-better-auth.session_token"}},
		{false, account.RealmAdmin, true, []string{"platform-admin.session_token"}},
		{true, account.RealmAdmin, false, []string{"__Secure-platform-admin.session_token", "__Secure-platform-admin.dont_remember"}},
	} {
		c := NewCookies(CookieOptions{Secret: secret, Secure: tt.secure, PlayerPrefix: "better-auth", AdminPrefix: "platform-admin", TTL: 168 * time.Hour})
		cookies := c.SessionCookies(tt.realm, "tok", tt.remember)
		if len(cookies) != len(tt.names) {
			t.Fatalf("%+v: %d cookies, want %d", tt, len(cookies), len(tt.names))
		}
		for i, ck := range cookies {
			line := ck.String()
			if ck.Name != tt.names[i] {
				t.Errorf("cookie %d name %q, want %q", i, ck.Name, tt.names[i])
			}
			for _, attr := range []string{"Path=/", "HttpOnly", "SameSite=Lax"} {
				if !strings.Contains(line, attr) {
					t.Errorf("%s lacks %s", line, attr)
				}
			}
			if strings.Contains(line, "Secure;") || strings.HasSuffix(line, "Secure") {
				if !tt.secure {
					t.Errorf("%s is Secure on an http base URL", line)
				}
			} else if tt.secure {
				t.Errorf("%s lacks Secure on an https base URL", line)
			}
			hasMaxAge := strings.Contains(line, "Max-Age=")
			if i == 0 && tt.remember && !strings.Contains(line, "Max-Age=604800") {
				t.Errorf("remembered session cookie %s lacks Max-Age=604800", line)
			}
			if !tt.remember && hasMaxAge {
				t.Errorf("browser-session cookie %s has a Max-Age", line)
			}
		}
		// The request side reads what the response side wrote.
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(&http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value})
		if tok, ok := c.TokenFromRequest(tt.realm, r); !ok || tok != "tok" {
			t.Errorf("%+v: TokenFromRequest = %q, %v", tt, tok, ok)
		}
		otherRealm := account.RealmAdmin
		if tt.realm == account.RealmAdmin {
			otherRealm = account.RealmPlayer
		}
		if _, ok := c.TokenFromRequest(otherRealm, r); ok {
			t.Errorf("%+v: the cookie opened the other realm", tt)
		}
	}
}

func TestClearCookies(t *testing.T) {
	c := NewCookies(CookieOptions{Secret: "0123456789abcdef0123456789abcdef", Secure: false, PlayerPrefix: "better-auth", AdminPrefix: "platform-admin", TTL: time.Hour})
	var names []string
	for _, ck := range c.ClearCookies(account.RealmPlayer) {
		if !strings.Contains(ck.String(), "Max-Age=0") {
			t.Errorf("%s does not expire the cookie", ck)
		}
		names = append(names, ck.Name)
	}
	if got := strings.Join(names, ","); got != "better-auth.session_token,better-auth.session_data,better-auth.dont_remember" {
		t.Fatalf("cleared %s", got)
	}
}

// The signature is an ordinary HMAC-SHA256 that anyone holding the secret
// can recompute; this pins the algorithm independently of Sign.
func TestCookieSignatureIndependently(t *testing.T) {
	secret, token := "0123456789abcdef0123456789abcdef", "some-token_value"
	c := NewCookies(CookieOptions{Secret: secret, Secure: false, PlayerPrefix: "p", AdminPrefix: "a", TTL: time.Hour})
	v, _ := url.QueryUnescape(c.Sign(token))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(token))
	if want := token + "." + base64.StdEncoding.EncodeToString(mac.Sum(nil)); v != want {
		t.Fatalf("signed %q, want %q", v, want)
	}
}

func FuzzCookieVerify(f *testing.F) {
	c := NewCookies(CookieOptions{Secret: "0123456789abcdef0123456789abcdef", Secure: false, PlayerPrefix: "p", AdminPrefix: "a", TTL: time.Hour})
	f.Add(c.Sign("abc"))
	f.Add("abc.def")
	f.Add("%2e%2e")
	f.Fuzz(func(t *testing.T, v string) {
		tok, ok := c.Verify(v)
		if !ok {
			return
		}
		// A verified value must be exactly the signature of its token.
		want, _ := url.PathUnescape(c.Sign(tok))
		if mustUnescape(v) != want {
			t.Fatalf("Verify(%q) accepted token %q with a foreign signature", v, tok)
		}
	})
}

func mustUnescape(v string) string {
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
