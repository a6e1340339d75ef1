package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
)

func TestCheckCallback(t *testing.T) {
	o := NewOrigins([]string{"http://localhost:8080", "https://play.example.com"})
	tests := []struct {
		target string
		ok     bool
	}{
		{"", true},
		{"/", true},
		{"/profile/confirm?x=1#y", true},
		{"https://play.example.com/welcome", true},
		{"HTTPS://PLAY.EXAMPLE.COM:443/welcome", true},
		{"http://localhost:8080/x", true},
		{"http://localhost:8081/x", false},
		{"https://play.example.com.evil.com/", false},
		{"https://evil.com/?https://play.example.com", false},
		{"https://play.example.com@evil.com/", false},
		{"//evil.com/x", false},
		{"/\\evil.com", false},
		{"\\\\evil.com", false},
		{"/%2F%2Fevil.com", false},
		{"/%5cevil.com", false},
		{"/a//b", false},
		{"/x\r\nLocation: https://evil.com", false},
		{"javascript:alert(1)", false},
		{"data:text/html,hi", false},
		{"relative/path", false},
		{"http:/evil.com", false},
		{"https://play.example.com\\@evil.com", false},
	}
	for _, tt := range tests {
		err := o.CheckCallback(tt.target, CodeInvalidCallbackURL)
		if (err == nil) != tt.ok {
			t.Errorf("CheckCallback(%q) = %v, want ok=%v", tt.target, err, tt.ok)
		}
		if err != nil {
			if pe, _ := platform.As(err); pe.Code != CodeInvalidCallbackURL || pe.Kind != platform.KindForbidden {
				t.Errorf("CheckCallback(%q) = %v, want 403 INVALID_CALLBACK_URL", tt.target, err)
			}
		}
	}
	if err := o.CheckCallback("https://evil.com", CodeInvalidRedirectURL); platform.ErrorCode(err) != CodeInvalidRedirectURL {
		t.Errorf("redirect code = %v", err)
	}
}

func TestCheckOriginAndLogin(t *testing.T) {
	o := NewOrigins([]string{"http://localhost:8080"})
	type hdr map[string]string
	tests := []struct {
		name     string
		method   string
		h        hdr
		origin   string // CheckOrigin code, "" for pass
		loginErr string // CheckLogin code
	}{
		{"GET with cookie", "GET", hdr{"Cookie": "a=b"}, "", ""},
		{"POST without cookie or origin (curl)", "POST", hdr{}, "", ""},
		{"POST cookie trusted origin", "POST", hdr{"Cookie": "a=b", "Origin": "http://localhost:8080"}, "", ""},
		{"POST cookie no origin", "POST", hdr{"Cookie": "a=b"}, CodeMissingOrNullOrigin, CodeMissingOrNullOrigin},
		{"POST cookie null origin", "POST", hdr{"Cookie": "a=b", "Origin": "null"}, CodeMissingOrNullOrigin, CodeMissingOrNullOrigin},
		{"POST cookie null origin, trusted referer", "POST", hdr{"Cookie": "a=b", "Origin": "null", "Referer": "http://localhost:8080/page"}, CodeMissingOrNullOrigin, CodeMissingOrNullOrigin},
		{"null origin with fetch metadata", "POST", hdr{"Origin": "null", "Sec-Fetch-Mode": "cors", "Referer": "http://localhost:8080/"}, "", CodeMissingOrNullOrigin},
		{"POST cookie foreign origin", "POST", hdr{"Cookie": "a=b", "Origin": "http://evil.example"}, CodeInvalidOrigin, CodeInvalidOrigin},
		{"POST cookie trusted referer", "POST", hdr{"Cookie": "a=b", "Referer": "http://localhost:8080/page?x"}, "", ""},
		{"POST cookie foreign referer", "POST", hdr{"Cookie": "a=b", "Referer": "http://evil.example/"}, CodeInvalidOrigin, CodeInvalidOrigin},
		{"DELETE cookie foreign origin", "DELETE", hdr{"Cookie": "a=b", "Origin": "http://evil.example"}, CodeInvalidOrigin, CodeInvalidOrigin},
		{"no cookie foreign origin", "POST", hdr{"Origin": "http://evil.example"}, "", CodeInvalidOrigin},
		{"fetch metadata without origin", "POST", hdr{"Sec-Fetch-Mode": "cors"}, "", CodeMissingOrNullOrigin},
		{"cross-site form navigation", "POST", hdr{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Origin": "http://localhost:8080"}, "", CodeCrossSiteNavigationLogin},
		{"same-origin fetch", "POST", hdr{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": "http://localhost:8080"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "http://localhost:8080/api/auth/sign-in/email", http.NoBody)
			for k, v := range tt.h {
				r.Header.Set(k, v)
			}
			if got := platform.ErrorCode(o.CheckOrigin(r)); got != tt.origin {
				t.Errorf("CheckOrigin = %q, want %q", got, tt.origin)
			}
			if got := platform.ErrorCode(o.CheckLogin(r)); got != tt.loginErr {
				t.Errorf("CheckLogin = %q, want %q", got, tt.loginErr)
			}
		})
	}
}
