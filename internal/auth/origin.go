package auth

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Error codes of the CSRF and redirect checks (better-auth's).
const (
	CodeMissingOrNullOrigin      = "MISSING_OR_NULL_ORIGIN"
	CodeInvalidOrigin            = "INVALID_ORIGIN"
	CodeInvalidCallbackURL       = "INVALID_CALLBACK_URL"
	CodeInvalidRedirectURL       = "INVALID_REDIRECT_URL"
	CodeCrossSiteNavigationLogin = "CROSS_SITE_NAVIGATION_LOGIN_BLOCKED"
)

// Origins is the allow-list of origins that may send state-changing
// requests with a session cookie and that callback URLs may point to.
type Origins struct {
	trusted map[string]bool
}

// NewOrigins returns the allow-list of the given origins
// (scheme://host[:port]); the base URL's origin belongs in the list.
func NewOrigins(trusted []string) *Origins {
	o := &Origins{trusted: make(map[string]bool, len(trusted))}
	for _, t := range trusted {
		if n, ok := normalizeOrigin(t); ok {
			o.trusted[n] = true
		}
	}
	return o
}

// normalizeOrigin reduces an absolute http(s) URL to its origin, in lower
// case and without the scheme's default port, as a browser serialises it.
func normalizeOrigin(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.User != nil {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.ToLower(u.Host)
	if scheme == "http" {
		host = strings.TrimSuffix(host, ":80")
	} else {
		host = strings.TrimSuffix(host, ":443")
	}
	return scheme + "://" + host, true
}

// Trusted reports whether the origin of an absolute URL is on the list.
func (o *Origins) Trusted(rawURL string) bool {
	n, ok := normalizeOrigin(rawURL)
	return ok && o.trusted[n]
}

// requestOrigin returns the Origin header, or the origin of the Referer
// when there is no Origin; "" when neither is usable. "null" is what
// browsers send when they will not name the origin (sandboxed frames,
// cross-origin redirect chains); as in better-auth it names nothing and
// does not fall back to a Referer, which the same page controls.
func requestOrigin(r *http.Request) string {
	switch origin := r.Header.Get("Origin"); origin {
	case "null":
		return ""
	case "":
	default:
		return origin
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		if n, ok := normalizeOrigin(ref); ok {
			return n
		}
	}
	return ""
}

// IsSafeMethod reports whether method does not change state.
func IsSafeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// CheckOrigin is the CSRF rule: a state-changing request that carries a
// cookie must come from a trusted origin, named by Origin or, failing that,
// Referer. Requests without cookies cannot ride on a victim's session, so
// they pass (scripts and native clients send no Origin).
func (o *Origins) CheckOrigin(r *http.Request) error {
	if IsSafeMethod(r.Method) || r.Header.Get("Cookie") == "" {
		return nil
	}
	return o.requireOrigin(r)
}

func (o *Origins) requireOrigin(r *http.Request) error {
	origin := requestOrigin(r)
	if origin == "" {
		return platform.Errorf(platform.KindForbidden, CodeMissingOrNullOrigin, "Missing or null Origin")
	}
	if !o.Trusted(origin) {
		return platform.Errorf(platform.KindForbidden, CodeInvalidOrigin, "Invalid origin")
	}
	return nil
}

// CheckLogin adds better-auth's form-CSRF rule for sign-in and sign-up,
// which matter even without a cookie (login CSRF): a cross-site top-level
// navigation is refused, a request with fetch metadata must name a trusted
// origin, and an Origin that is present must be trusted.
func (o *Origins) CheckLogin(r *http.Request) error {
	if IsSafeMethod(r.Method) {
		return nil
	}
	site, mode := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Mode")
	hasMetadata := site != "" || mode != "" || r.Header.Get("Sec-Fetch-Dest") != ""
	if hasMetadata {
		if site == "cross-site" && mode == "navigate" {
			return platform.Errorf(platform.KindForbidden, CodeCrossSiteNavigationLogin, "Cross-site navigation login is blocked")
		}
		return o.requireOrigin(r)
	}
	if r.Header.Get("Cookie") != "" || requestOrigin(r) != "" {
		return o.requireOrigin(r)
	}
	return nil
}

// CheckCallback accepts a callback or redirect target that is empty, a safe
// relative path, or an absolute URL on a trusted origin; anything else is
// refused with code (INVALID_CALLBACK_URL or INVALID_REDIRECT_URL), so the
// service never sends a user to someone else's site.
func (o *Origins) CheckCallback(target, code string) error {
	if target == "" || SafeRelativePath(target) {
		return nil
	}
	if o.Trusted(target) {
		if u, err := url.Parse(target); err == nil && !strings.ContainsAny(target, "\\\x00\r\n\t") && u.Opaque == "" {
			return nil
		}
	}
	msg := "Invalid callbackURL"
	if code == CodeInvalidRedirectURL {
		msg = "Invalid redirectURL"
	}
	return platform.Errorf(platform.KindForbidden, code, "%s", msg)
}

// SafeRelativePath reports whether p is a path on this site that a browser
// cannot read as another host: one leading '/', no "//" (protocol-relative
// URLs), no backslash (which browsers treat as '/'), no control characters
// and no encoded slash or backslash.
func SafeRelativePath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || len(p) > 2048 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	lower := strings.ToLower(p)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(p, "//") {
		return false
	}
	_, err := url.Parse(p)
	return err == nil
}
