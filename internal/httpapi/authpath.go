package httpapi

import (
	"net/http"
	"path"
	"strings"

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

// maxEncodingLayers is how many layers of percent-encoding a path may
// carry. Each layer costs a pass over the path; a path still changing
// after this many is treated as a blocked name, whatever it spells.
const maxEncodingLayers = 16

// decodeAuthPath reduces an escaped request path to the spelling every
// variant of it shares, before dot segments are resolved: percent-decoded
// until stable (so layered encoding cannot hide a name; tooDeep past
// maxEncodingLayers), lower-cased, backslashes read as slashes, anything
// after a decoded '?' or '#' dropped, and runs of slashes collapsed.
func decodeAuthPath(escaped string) (p string, tooDeep bool) {
	p = escaped
	tooDeep = true
	for range maxEncodingLayers + 1 {
		d := unescapeLeniently(p)
		if d == p {
			tooDeep = false
			break
		}
		p = d
	}
	return normalizeSpelling(p), tooDeep
}

// unescapeLeniently decodes every well-formed %XX of s and keeps a '%'
// that starts none as it is, as lenient servers and proxies do: strict
// decoding would stop at "%2%46", which a lenient one reads as "%2F" and,
// one layer further, as a slash.
func unescapeLeniently(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// normalizeSpelling lower-cases a path, reads backslashes as slashes,
// drops anything after a '?' or '#', cuts every segment's parameters
// (";x", which servers and proxies that follow RFC 3986's path
// parameters ignore, so /api;x/auth is /api/auth to them) and collapses
// runs of slashes.
func normalizeSpelling(p string) string {
	p = strings.ToLower(p)
	p = strings.ReplaceAll(p, "\\", "/")
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if strings.IndexByte(p, ';') >= 0 {
		p = cutSegmentParams(p)
	}
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	return "/" + strings.TrimPrefix(p, "/")
}

// cutSegmentParams drops from each segment of p what follows its first ';'.
func cutSegmentParams(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		segs[i], _, _ = strings.Cut(seg, ";")
	}
	return strings.Join(segs, "/")
}

// resolvedLayerByLayerUnderAuth reports whether an escaped path starts or
// lands under /api/auth at some layer when its dot segments are resolved
// before each layer of percent-encoding is peeled, as a server or proxy
// that follows RFC 3986 (dot segments first, then decoding) would read it,
// possibly more than once. decodeAuthPath reads it the other way round,
// decoding every layer first; /api/x/../auth%2F%2E%2E%2Fupdate-user
// reaches /api/auth only this way.
func resolvedLayerByLayerUnderAuth(escaped string) bool {
	p := escaped
	for range maxEncodingLayers + 1 {
		spelt := normalizeSpelling(p)
		resolved := path.Clean(spelt)
		if underAuth(spelt) || underAuth(resolved) {
			return true
		}
		d := unescapeLeniently(resolved)
		if d == resolved {
			return false
		}
		p = d
	}
	return false
}

// authPathVerdict is what the guard decides about one path.
type authPathVerdict struct {
	under   bool   // the path is, or climbs out of, /api/auth
	blocked bool   // it names a blocked account mutation
	use     string // the profile endpoint that replaces it
}

// inspectAuthPath decides about an escaped request path. A path counts as
// under /api/auth when its decoded spelling starts there (even if its dot
// segments then climb out), or its resolved form does, read either way
// (decoded then resolved, or resolved layer by layer); it is blocked when
// any segment of the decoded spelling, resolved away or not, is a blocked
// name, or when it is encoded too deeply to read.
func inspectAuthPath(escaped string) authPathVerdict {
	if plain, ok := plainPath(escaped); ok {
		if !underAuthAnyCase(plain) {
			return authPathVerdict{}
		}
		use, blocked := blockedSegment(strings.ToLower(plain))
		return authPathVerdict{under: true, blocked: blocked, use: use}
	}
	return inspectDecodedAuthPath(escaped)
}

// inspectDecodedAuthPath is inspectAuthPath for any path, decoding and
// resolving it in full (FuzzBlockedAuthPath holds plainPath's shortcut
// to it).
func inspectDecodedAuthPath(escaped string) authPathVerdict {
	raw, tooDeep := decodeAuthPath(escaped)
	if !underAuth(raw) && !underAuth(path.Clean(raw)) && !resolvedLayerByLayerUnderAuth(escaped) {
		return authPathVerdict{}
	}
	if tooDeep {
		return authPathVerdict{under: true, blocked: true, use: "/api/profile/request-profile-change"}
	}
	use, blocked := blockedSegment(raw)
	return authPathVerdict{under: true, blocked: blocked, use: use}
}

// blockedAuthPath reports whether an escaped request path names a blocked
// account mutation under /api/auth, on any mount, and which profile
// endpoint replaces it.
func blockedAuthPath(escaped string) (replacement string, blocked bool) {
	v := inspectAuthPath(escaped)
	return v.use, v.blocked
}

// plainPath recognises, without allocating, the common path that is
// already normal but for its letter case: letters, digits, '-', '_' and
// single slashes only (no escapes, dots or backslashes), where
// normalising only lower-cases it and drops a trailing slash.
func plainPath(escaped string) (string, bool) {
	if len(escaped) == 0 || escaped[0] != '/' {
		return "", false
	}
	for i := 1; i < len(escaped); i++ {
		c := escaped[i]
		plain := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' ||
			c == '/' && escaped[i-1] != '/'
		if !plain {
			return "", false
		}
	}
	if len(escaped) > 1 {
		return strings.TrimSuffix(escaped, "/"), true
	}
	return escaped, true
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

// guardAuthPath runs before routing, for every method, and reports
// whether it answered: a blocked account mutation path answers 404
// ACCOUNT_MUTATION_BLOCKED naming the profile endpoint to use, whatever
// variant of the path was sent. Any other unclean path under /api/auth
// (doubled slashes, dot segments, even ones that climb out of it) answers
// 404 as better-auth's router does, instead of the mux's redirect to the
// cleaned path.
func guardAuthPath(w http.ResponseWriter, r *http.Request) bool {
	v := inspectAuthPath(r.URL.EscapedPath())
	if !v.under {
		return false
	}
	if target, blocked := v.use, v.blocked; blocked {
		respond(w, http.StatusNotFound, errorBody{
			Code:    codeAccountMutationBlocked,
			Message: "Account changes are not made here; use " + target + ", which confirms the change by email",
			Details: map[string]any{"use": target},
		})
		return true
	}
	if r.URL.Path != path.Clean(r.URL.Path) {
		respond(w, http.StatusNotFound, errorBody{Code: platform.CodeNotFound, Message: "no such route"})
		return true
	}
	return false
}

func underAuth(normalized string) bool {
	return normalized == "/api/auth" || strings.HasPrefix(normalized, "/api/auth/")
}

// underAuthAnyCase is underAuth for a path not yet lower-cased.
func underAuthAnyCase(p string) bool {
	const mount = "/api/auth"
	return len(p) >= len(mount) && strings.EqualFold(p[:len(mount)], mount) && (len(p) == len(mount) || p[len(mount)] == '/')
}
