package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
)

type echoRequest struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func (e *echoRequest) Validate() error {
	f := platform.FieldErrors{}
	if e.Name == "" {
		f.Add("name", "is required")
	}
	return f.Err()
}

// testStack serves a decoding handler and a panicking one behind the
// production middleware.
func testStack() http.Handler {
	mux := http.NewServeMux()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[echoRequest](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, 200, in)
	})
	mux.HandleFunc("GET /panic", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) {
		respondErr(w, r, log, io.ErrUnexpectedEOF)
	})
	return newPipeline(pipelineConfig{log: log}, mux)
}

func TestDecodeAndErrorModel(t *testing.T) {
	h := testStack()
	big := `{"name":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		code, field                     string
	}{
		{"ok", "POST", "/echo", "application/json", `{"name":"a","count":2}`, 200, "", ""},
		{"json suffix type", "POST", "/echo", "application/vnd.api+json; charset=utf-8", `{"name":"a"}`, 200, "", ""},
		{"malformed", "POST", "/echo", "application/json", `{"name":`, 400, "INVALID_JSON", ""},
		{"not an object", "POST", "/echo", "application/json", `[1,2]`, 400, "INVALID_JSON", ""},
		{"wrong type", "POST", "/echo", "application/json", `{"name":"a","count":"two"}`, 400, "VALIDATION_ERROR", "count"},
		{"missing field", "POST", "/echo", "application/json", `{}`, 400, "VALIDATION_ERROR", "name"},
		{"empty body", "POST", "/echo", "", ``, 400, "VALIDATION_ERROR", "name"},
		{"text body", "POST", "/echo", "text/plain", `{"name":"a"}`, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"no content type", "POST", "/echo", "", `{"name":"a"}`, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"too large", "POST", "/echo", "application/json", big, 413, "PAYLOAD_TOO_LARGE", ""},
		{"panic", "GET", "/panic", "", ``, 500, "INTERNAL_ERROR", ""},
		{"unexpected error", "GET", "/fail", "", ``, 500, "INTERNAL_ERROR", ""},
		{"wrong method", "GET", "/echo", "", ``, 405, "METHOD_NOT_ALLOWED", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body.Bytes()[:min(200, rec.Body.Len())])
			}
			if tc.code == "" {
				return
			}
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
				t.Fatalf("body is not the error model: %v", err)
			}
			if e.Code != tc.code || e.Message == "" {
				t.Fatalf("error %+v, want code %s", e, tc.code)
			}
			if tc.field != "" {
				fields, _ := e.Details["fields"].(map[string]any)
				if _, ok := fields[tc.field]; !ok || !strings.Contains(e.Message, tc.field) {
					t.Fatalf("error %+v does not name field %s", e, tc.field)
				}
			}
			if bytes.Contains(rec.Body.Bytes(), []byte("boom")) || bytes.Contains(rec.Body.Bytes(), []byte("EOF")) {
				t.Fatalf("internal detail leaked: %s", rec.Body.Bytes())
			}
		})
	}
}
