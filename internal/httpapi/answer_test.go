package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAnswerServes: a made-once answer sends its body with its length,
// a 304 without a body to a matching If-None-Match, its headers alone to
// HEAD, and its shared header values survive a response that adds to
// them.
func TestAnswerServes(t *testing.T) {
	a := jsonAnswer(map[string]int{"n": 1}, answerOptions{etag: `"v1"`, cacheControl: "no-cache", varyOnEncoding: true})

	get := httptest.NewRecorder()
	a.serve(get, httptest.NewRequest("GET", "/x", nil))
	if get.Code != 200 || get.Body.String() != "{\"n\":1}\n" || get.Header().Get("Content-Length") != "8" ||
		get.Header().Get("Etag") != `"v1"` || get.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET: %d %q %v", get.Code, get.Body, get.Header())
	}
	get.Header().Add("Vary", "Origin") // as a later step may
	get.Header().Set("Etag", `"other"`)

	again := httptest.NewRecorder()
	a.serve(again, httptest.NewRequest("GET", "/x", nil))
	if v := again.Header().Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding" || again.Header().Get("Etag") != `"v1"` {
		t.Fatalf("a response's changes reached the next: Vary %v, Etag %q", v, again.Header().Get("Etag"))
	}

	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("If-None-Match", `W/"v1"`)
	cached := httptest.NewRecorder()
	a.serve(cached, req)
	if cached.Code != http.StatusNotModified || cached.Body.Len() != 0 || cached.Header().Get("Etag") != `"v1"` {
		t.Fatalf("If-None-Match: %d %q %v", cached.Code, cached.Body, cached.Header())
	}

	head := httptest.NewRecorder()
	a.serve(head, httptest.NewRequest("HEAD", "/x", nil))
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") != "8" {
		t.Fatalf("HEAD: %d %q %v", head.Code, head.Body, head.Header())
	}

	bad := httptest.NewRecorder()
	jsonAnswer(func() {}, answerOptions{}).serve(bad, httptest.NewRequest("GET", "/x", nil))
	if bad.Code != http.StatusInternalServerError || bad.Body.String() != "{\"code\":\"INTERNAL_ERROR\",\"message\":\"internal error\"}\n" {
		t.Fatalf("a value JSON cannot encode: %d %q", bad.Code, bad.Body)
	}
}
