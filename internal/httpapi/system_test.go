package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
)

func TestSystemRoutes(t *testing.T) {
	srv := apitest.New(t)
	c := srv.Client(t)

	hello := c.Do("GET", "/api", nil)
	var h struct{ Message string }
	hello.Decode(t, &h)
	if hello.Status != 200 || h.Message == "" {
		t.Fatalf("GET /api = %d %s", hello.Status, hello.Body)
	}

	health := c.Do("GET", "/api/health", nil)
	var hb struct {
		Status string
		Checks map[string][]struct{ Status string }
	}
	health.Decode(t, &hb)
	if health.Status != 200 || hb.Status != "pass" || hb.Checks["database:responseTime"][0].Status != "pass" {
		t.Fatalf("GET /api/health = %d %s", health.Status, health.Body)
	}

	meta := c.Do("GET", "/api/meta", nil)
	var m map[string]any
	meta.Decode(t, &m)
	if m["apiPrefix"] != "/api" || m["environment"] != "development" || m["database"] != srv.App.DB.Dialect() || m["version"] != "test" {
		t.Fatalf("GET /api/meta = %s", meta.Body)
	}

	doc := c.Do("GET", "/api/openapi.json", nil)
	var d struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	doc.Decode(t, &d)
	if !strings.HasPrefix(d.OpenAPI, "3.1") || d.Paths["/api/health"] == nil {
		t.Fatalf("openapi.json: version %q, %d paths", d.OpenAPI, len(d.Paths))
	}
}

func TestHealthFailsWhenDatabaseIsGone(t *testing.T) {
	srv := apitest.New(t)
	srv.App.DB.Close()
	res := srv.Client(t).Do("GET", "/api/health", nil)
	if res.Status != http.StatusServiceUnavailable || !strings.Contains(string(res.Body), `"fail"`) {
		t.Fatalf("health with closed database = %d %s", res.Status, res.Body)
	}
}

func TestRoutingErrorsUseErrorModel(t *testing.T) {
	srv := apitest.New(t)
	c := srv.Client(t)
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/api/does-not-exist", 404, "NOT_FOUND"},
		{"GET", "/elsewhere", 404, "NOT_FOUND"},
		{"POST", "/api/health", 405, "METHOD_NOT_ALLOWED"},
		{"DELETE", "/api/meta", 405, "METHOD_NOT_ALLOWED"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			res := c.Do(tc.method, tc.path, nil)
			if res.Status != tc.status || res.Code() != tc.code {
				t.Fatalf("got %d %s, want %d %s", res.Status, res.Body, tc.status, tc.code)
			}
			if tc.status == 405 && !strings.Contains(res.Header.Get("Allow"), "GET") {
				t.Fatalf("405 without Allow: %v", res.Header)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
		})
	}
}

func TestRequestIDIsKeptOrMade(t *testing.T) {
	srv := apitest.New(t)
	c := srv.Client(t)
	c.Header.Set("X-Request-Id", "lb-1234")
	if got := c.Do("GET", "/api", nil).Header.Get("X-Request-Id"); got != "lb-1234" {
		t.Fatalf("request id %q, want the caller's", got)
	}
	c.Header.Set("X-Request-Id", "bad id with spaces")
	if got := c.Do("GET", "/api", nil).Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Fatalf("request id %q, want a fresh one", got)
	}
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(doc.Paths.Map())
	if len(doc.Paths.Map()) == 0 || len(raw) == 0 {
		t.Fatal("document has no paths")
	}
}
