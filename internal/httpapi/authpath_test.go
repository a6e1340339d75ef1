package httpapi

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestBlockedAuthPath(t *testing.T) {
	tests := []struct {
		path    string
		blocked bool
		use     string
	}{
		{"/api/auth/player/update-user", true, "/api/profile/request-profile-change"},
		{"/api/auth/admin/change-password", true, "/api/profile/request-password-change"},
		{"/api/auth/change-email", true, "/api/profile/request-email-change"},
		{"/api/auth/player/update-user/", true, ""},
		{"/API/AUTH/PLAYER/UPDATE-USER", true, ""},
		{"/api/auth/player/update%2Duser", true, ""},
		{"/api/auth/player/update%252Duser", true, ""},
		{"/api/auth/player%2Fupdate-user", true, ""},
		{"/api/auth/player%2fchange-email", true, ""},
		{"/api/auth/player//update-user", true, ""},
		{"//api//auth//update-user", true, ""},
		{"/api/auth/player/./update-user", true, ""},
		{"/api/auth/player/x/../update-user", true, ""},
		{"/api/auth/player/%2e%2e/update-user", true, ""},
		{"/api/x/../auth/update-user", true, ""},
		{"/api/auth/player\\update-user", true, ""},
		{"/api/auth/player/update-user;jsessionid=1", true, ""},
		{"/api/auth/player/update-user.", true, ""},
		{"/api/auth/player/update-user%00", true, ""},
		{"/api/auth/player/update-user%3Fx=1", true, ""},
		{"/api/auth/player/update-user/extra", true, ""},
		{"/api/auth/player/update%2525252Duser", true, ""},
		{"/api/auth/player/update%" + strings.Repeat("25", 11) + "2Duser", true, ""},
		{"/api/auth/player/update%" + strings.Repeat("25", maxEncodingLayers-1) + "2Duser", true, ""},
		// Past the limit a path is blocked whatever it names.
		{"/api/auth/player/sign%" + strings.Repeat("25", maxEncodingLayers+5) + "2Din", true, "/api/profile/request-profile-change"},
		{"/api/profile/x%" + strings.Repeat("25", maxEncodingLayers+5) + "2Dy", false, ""},
		{"/api/auth//%2e%2e/player/update-user", true, ""},
		{"/api/auth/../player/change-email", true, "/api/profile/request-email-change"},
		{"/api/auth/%2e%2e/%2e%2e/api/profile/update-user", true, ""},
		// Under /api/auth only when dot segments are resolved before
		// each layer of encoding is peeled.
		{"/api/x/../auth%2F%2E%2E%2Fupdate-user", true, ""},
		{"\\api/detour/../auth%2F%2F%2e%2e%2F%2F%2e%2e%2Fupdate-user;v=1", true, ""},
		{"/api/x/../auth%252F..%252Fchange-password", true, "/api/profile/request-password-change"},
		// Segment parameters on the segments above the name.
		{"/api;x/auth/player/update-user", true, "/api/profile/request-profile-change"},
		{"/api/auth;x/update-user", true, "/api/profile/request-profile-change"},
		{"/api/auth%3bx/change-password", true, "/api/profile/request-password-change"},
		{"/api/auth/player;v=1/change-email", true, "/api/profile/request-email-change"},
		{"/api%3B/auth%253b/player/update-user", true, ""},
		{"/api/auth/player/sign-in/email", false, ""},
		{"/api/auth/player/get-session", false, ""},
		{"/api/auth/player/update-users", false, ""},
		{"/api/profile/update-user", false, ""},
		{"/api/authx/update-user", false, ""},
		{"/api/auth/player/%zz", false, ""},
		// A malformed escape at one layer ("%2%46") hides a slash from a
		// strict decoder but not from a lenient proxy.
		{"/Api/auth/detour/.././admin%25252%252546update-user", true, "/api/profile/request-profile-change"},
	}
	for _, tt := range tests {
		use, blocked := blockedAuthPath(tt.path)
		if blocked != tt.blocked || (tt.use != "" && use != tt.use) {
			t.Errorf("blockedAuthPath(%q) = %q, %v; want blocked=%v use %q", tt.path, use, blocked, tt.blocked, tt.use)
		}
	}
}

// mutate applies one random disguise to a path: the kinds of variation a
// client or proxy might use to sneak a blocked path past a matcher.
func mutate(r *rand.Rand, p string) string {
	switch r.IntN(12) {
	case 0: // flip the case of one letter
		i := r.IntN(len(p))
		b := []byte(p)
		if c := b[i]; c >= 'a' && c <= 'z' {
			b[i] = c - 32
		} else if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
		return string(b)
	case 1: // percent-encode one byte (a '%' too: double encoding), but not
		// the hex digits of an escape, which would make the path invalid
		// rather than disguised (the server answers 400 to those)
		i := r.IntN(len(p))
		if (i >= 1 && p[i-1] == '%') || (i >= 2 && p[i-2] == '%') {
			return p
		}
		return p[:i] + "%" + strings.ToUpper(hex2(p[i])) + p[i+1:]
	case 2: // double a slash
		if i := strings.IndexByte(p[1:], '/'); i >= 0 {
			return p[:i+1] + "/" + p[i+1:]
		}
		return "/" + p
	case 3:
		return p + "/"
	case 4: // a dot segment before the last segment
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			return p[:i] + "/." + p[i:]
		}
		return p
	case 5: // a detour: /x/..
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			return p[:i] + "/detour/.." + p[i:]
		}
		return p
	case 6: // encode a slash
		if i := strings.LastIndexByte(p, '/'); i > 0 {
			return p[:i] + "%2F" + p[i+1:]
		}
		return p
	case 7:
		return strings.Replace(p, "/", "\\", 1+r.IntN(2))
	case 8: // one more layer of encoding over every escape there is
		return strings.ReplaceAll(p, "%", "%25")
	case 9: // climb out of the mount and back in through a doubled slash
		if strings.HasPrefix(p, "/api/auth/") {
			return "/api/auth//%2e%2e/" + strings.TrimPrefix(p, "/api/auth/")
		}
		return p
	case 10: // a segment parameter on any segment: /api;x/auth/…
		segs := strings.Split(p, "/")
		if i := r.IntN(len(segs)); segs[i] != "" {
			segs[i] += ";x"
		}
		return strings.Join(segs, "/")
	default: // a matrix parameter on the last segment
		return p + ";v=1"
	}
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// FuzzBlockedAuthPath disguises every blocked path on every mount with a
// random series of mutations and checks it stays blocked; it also feeds
// arbitrary paths to prove the normaliser never panics and never blocks a
// real route.
func FuzzBlockedAuthPath(f *testing.F) {
	f.Add(uint64(1), uint8(3), "/api/auth/player/sign-in/email")
	f.Add(uint64(2), uint8(8), "%%2e/../")
	f.Add(uint64(3), uint8(0), "/API/Auth/Player/Update-User/")
	f.Add(uint64(4), uint8(0), "/api/schemas/Health")
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8, arbitrary string) {
		r := rand.New(rand.NewPCG(seed, 7))
		for _, mount := range []string{"/api/auth/player", "/api/auth/admin", "/api/auth"} {
			for name := range blockedAuthPaths {
				p := mount + "/" + name
				for range steps % 12 {
					p = mutate(r, p)
				}
				if _, blocked := blockedAuthPath(p); !blocked {
					t.Fatalf("disguised %q slipped through", p)
				}
			}
		}
		got := inspectAuthPath(arbitrary) // must not panic
		if _, plain := plainPath(arbitrary); plain && got != inspectDecodedAuthPath(arbitrary) {
			t.Fatalf("%q: the plain path shortcut says %+v, the full reading %+v", arbitrary, got, inspectDecodedAuthPath(arbitrary))
		}
		for _, route := range []string{"/sign-in/email", "/sign-up/email", "/get-session", "/reset-password", "/list-sessions"} {
			if _, blocked := blockedAuthPath("/api/auth/player" + route); blocked {
				t.Fatalf("real route %s blocked", route)
			}
		}
	})
}
