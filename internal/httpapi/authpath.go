package httpapi

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/urfave/negroni/v3"

	"github.com/towerdefence/platformctl/internal/platform"
)

// codeAccountMutationBlocked answers the better-auth account mutation paths
// this service turns off: account changes go through the profile endpoints,
// which confirm them by email.
const codeAccountMutationBlocked = "ACCOUNT_MUTATION_BLOCKED"

// blockedAuthPaths maps each blocked path segment to the profile endpoint
// that replaces it.
var blockedAuthPaths = map[string]string{
	"update-user":     "/api/profile/request-profile-change",
	"change-password": "/api/profile/request-password-change",
	"change-email":    "/api/profile/request-email-change",
}

// normalizeAuthPath reduces an escaped request path to the form every
// variant of a path shares: percent-decoded until stable (so double
// encoding cannot hide a name), lower-cased, backslashes read as slashes,
// anything after a decoded '?' or '#' dropped, and cleaned (doubled
// slashes collapsed, dot segments resolved, trailing slash removed). It is
// the one place path variants are reasoned about.
func normalizeAuthPath(escaped string) string {
	p := escaped
	for range 4 {
		d, err := url.PathUnescape(p)
		if err != nil || d == p {
			break
		}
		p = d
	}
	p = strings.ToLower(p)
	p = strings.ReplaceAll(p, "\\", "/")
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return path.Clean("/" + p)
}

// blockedAuthPath reports whether an escaped request path names a blocked
// account mutation under /api/auth, on any mount, and which profile
// endpoint replaces it.
func blockedAuthPath(escaped string) (replacement string, blocked bool) {
	p := quickNormalize(escaped)
	if !underAuth(p) {
		return "", false
	}
	return blockedSegment(p)
}

// quickNormalize is normalizeAuthPath without its allocations for the
// common path that is already normal: lower-case letters, digits, '-',
// '_' and single slashes only (no escapes, dots or backslashes), where
// normalising only drops a trailing slash.
func quickNormalize(escaped string) string {
	if len(escaped) == 0 || escaped[0] != '/' {
		return normalizeAuthPath(escaped)
	}
	for i := 1; i < len(escaped); i++ {
		c := escaped[i]
		plain := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '/' && escaped[i-1] != '/'
		if !plain {
			return normalizeAuthPath(escaped)
		}
	}
	if len(escaped) > 1 {
		return strings.TrimSuffix(escaped, "/")
	}
	return escaped
}

// blockedSegment looks for a blocked name among the segments of a
// normalised path. A segment matches after parameters (";x") and trailing
// dots, spaces and control characters are cut, because some servers and
// proxies ignore them.
func blockedSegment(p string) (string, bool) {
	for rest := p; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i]
		}
		seg = strings.TrimRightFunc(seg, func(r rune) bool { return r == '.' || r <= ' ' || r == 0x7f })
		if target, ok := blockedAuthPaths[seg]; ok {
			return target, true
		}
	}
	return "", false
}

// guardAuthPaths runs before routing, for every method: a blocked account
// mutation path answers 404 ACCOUNT_MUTATION_BLOCKED naming the profile
// endpoint to use, whatever variant of the path was sent. Any other
// unclean path under /api/auth answers 404 as better-auth's router does,
// instead of the mux's redirect to the cleaned path.
func guardAuthPaths() negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		p := quickNormalize(r.URL.EscapedPath())
		if !underAuth(p) {
			next(w, r)
			return
		}
		if target, blocked := blockedSegment(p); blocked {
			respond(w, http.StatusNotFound, errorBody{
				Code:    codeAccountMutationBlocked,
				Message: "Account changes are not made here; use " + target + ", which confirms the change by email",
				Details: map[string]any{"use": target},
			})
			return
		}
		if r.URL.Path != path.Clean(r.URL.Path) {
			respond(w, http.StatusNotFound, errorBody{Code: platform.CodeNotFound, Message: "no such route"})
			return
		}
		next(w, r)
	}
}

func underAuth(normalized string) bool {
	return normalized == "/api/auth" || strings.HasPrefix(normalized, "/api/auth/")
}
