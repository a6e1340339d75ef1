package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestExactRoutesPickWhatTheMuxPicks checks the stack's exact lookup
// against the mux for every registered route: a request for a route's
// own method and path finds that route both ways, and requests the exact
// lookup must leave to the mux (HEAD, a wrong method, escapes, a trailing
// slash, a doubled slash) find nothing.
func TestExactRoutesPickWhatTheMuxPicks(t *testing.T) {
	routes := &routeTable{ServeMux: http.NewServeMux()}
	addRoutes(routes, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s := &stack{mux: routes.ServeMux, exact: routes.exactRoutes(nil)}
	exact := 0
	for _, rt := range routes.routes {
		method, path, _ := strings.Cut(rt.pattern, " ")
		target := strings.NewReplacer("{$}", "", "{", "x", "}", "").Replace(path)
		r := httptest.NewRequest(method, target, nil)
		_, muxPattern := routes.Handler(r)
		got := s.exactRoute(r)
		switch {
		case got != nil && got.pattern != muxPattern:
			t.Errorf("%s %s: exact lookup found %q, the mux %q", method, target, got.pattern, muxPattern)
		case got == nil && !strings.ContainsAny(path, "{") && !strings.HasSuffix(path, "/"):
			t.Errorf("%s %s: no exact route for a pattern without wildcards (%q)", method, target, rt.pattern)
		case got != nil:
			exact++
		}
		for _, miss := range []*http.Request{
			httptest.NewRequest("HEAD", target, nil),
			httptest.NewRequest("PATCH", target, nil),
			httptest.NewRequest(method, target+"/", nil),
			httptest.NewRequest(method, strings.Replace(target, "/", "//", 1), nil),
			httptest.NewRequest(method, strings.Replace(target, "a", "%61", 1), nil),
		} {
			if got := s.exactRoute(miss); got != nil {
				t.Errorf("%s %s: exact lookup found %q; the mux must decide", miss.Method, miss.URL.RequestURI(), got.pattern)
			}
		}
	}
	if exact < len(routes.routes)/2 {
		t.Fatalf("only %d of %d routes are exact", exact, len(routes.routes))
	}
}
