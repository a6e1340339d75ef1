package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/towerdefence/platformctl/internal/apitest"
)

// badBody is one hostile request body.
type badBody struct {
	name, contentType string
	body              []byte
	// malformed bodies must be refused with a 4xx; the others (odd but
	// well-formed JSON) may also be accepted, but never with a 5xx.
	malformed bool
}

// TestEveryWriteRouteRefusesBadBodies walks every route of the OpenAPI
// document that takes a body and sends it oversized, truncated, wrongly
// typed and otherwise hostile bodies, signed in and anonymous. Every
// answer must be in the error model, malformed bodies must get a 4xx, and
// nothing may answer 5xx.
func TestEveryWriteRouteRefusesBadBodies(t *testing.T) {
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	// Seeded, so that no route can answer 503 CATALOG_NOT_SEEDED.
	srv := newPlayerServer(t)
	player := srv.SignUpPlayer(t).Client
	anonymous := srv.Client(t)
	admin := srv.CreateAdmin(t).Client

	type route struct {
		method, path string
		op           *openapi3.Operation
	}
	var routes []route
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch || method == http.MethodDelete {
				routes = append(routes, route{method, path, op})
			}
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].path+routes[i].method < routes[j].path+routes[j].method })
	if len(routes) == 0 {
		t.Fatal("the OpenAPI document has no route that takes a body")
	}

	for _, rt := range routes {
		path := concretePath(rt.path)
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			clients := map[string]*apitest.Client{"anonymous": anonymous, "player": player}
			if strings.HasPrefix(rt.path, "/api/admin") || strings.HasPrefix(rt.path, "/api/liveops") || strings.HasPrefix(rt.path, "/api/auth/admin") {
				clients["admin"] = admin
			}
			for _, bb := range badBodies(requestSchema(rt.op)) {
				for who, c := range clients {
					req, err := http.NewRequest(rt.method, srv.URL+path, bytes.NewReader(bb.body))
					if err != nil {
						t.Fatal(err)
					}
					if bb.contentType != "" {
						req.Header.Set("Content-Type", bb.contentType)
					}
					req.Header.Set("Origin", c.Origin)
					res := c.Send(req)
					where := fmt.Sprintf("%s %s, %s, %s body", rt.method, path, who, bb.name)
					switch {
					case res.Status >= 500:
						t.Errorf("%s: %d %s", where, res.Status, res.Body)
					case bb.malformed && (res.Status < 400 || res.Status >= 500):
						t.Errorf("%s: %d, want a 4xx: %s", where, res.Status, res.Body)
					case res.Status >= 400 && !isErrorModel(res.Body):
						t.Errorf("%s: %d body is not in the error model: %s", where, res.Status, res.Body)
					}
				}
			}
		})
	}
}

// concretePath fills path parameters with a well-formed id that names
// nothing.
func concretePath(p string) string {
	return regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(p, "00000000-0000-4000-8000-000000000000")
}

func requestSchema(op *openapi3.Operation) *openapi3.Schema {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}

// badBodies builds the hostile bodies for a request schema (nil when the
// route documents none).
func badBodies(schema *openapi3.Schema) []badBody {
	oversized := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), 1<<20)...)
	oversized = append(oversized, `"}`...)
	valid := exampleBody(schema)
	out := []badBody{
		{name: "oversized", contentType: "application/json", body: oversized, malformed: true},
		{name: "truncated", contentType: "application/json", body: valid[:len(valid)/2], malformed: true},
		{name: "bare brace", contentType: "application/json", body: []byte(`{`), malformed: true},
		{name: "trailing garbage", contentType: "application/json", body: append(slices.Clone(valid), `}}`...), malformed: true},
		{name: "array", contentType: "application/json", body: []byte(`[]`), malformed: true},
		{name: "string", contentType: "application/json", body: []byte(`"text"`), malformed: true},
		{name: "number", contentType: "application/json", body: []byte(`42`), malformed: true},
		{name: "text/plain", contentType: "text/plain", body: valid, malformed: true},
		{name: "no content type", body: valid, malformed: true},
		{name: "deep nesting", contentType: "application/json", body: []byte(`{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`), malformed: true},
		{name: "null", contentType: "application/json", body: []byte(`null`)},
		{name: "empty object", contentType: "application/json", body: []byte(`{}`)},
		{name: "invalid UTF-8", contentType: "application/json", body: []byte("{\"name\":\"\xff\xfe\"}")},
		{name: "huge number", contentType: "application/json", body: []byte(`{"n":1e999999}`)},
		{name: "unknown fields", contentType: "application/json", body: []byte(`{"__proto__":{"admin":true},"constructor":1}`)},
	}
	if schema == nil {
		return out
	}
	names := make([]string, 0, len(schema.Properties))
	for name := range schema.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop := schema.Properties[name].Value
		for _, wrong := range wrongValues(prop) {
			var obj map[string]any
			json.Unmarshal(valid, &obj) //nolint:errcheck // valid is ours
			obj[name] = wrong
			raw, _ := json.Marshal(obj)
			out = append(out, badBody{name: fmt.Sprintf("%s as %T", name, wrong), contentType: "application/json", body: raw, malformed: true})
		}
		// A string a thousand times longer than anyone needs.
		if prop != nil && prop.Type.Is("string") {
			var obj map[string]any
			json.Unmarshal(valid, &obj) //nolint:errcheck // valid is ours
			obj[name] = strings.Repeat("ü", 100_000)
			raw, _ := json.Marshal(obj)
			out = append(out, badBody{name: name + " very long", contentType: "application/json", body: raw})
		}
	}
	return out
}

// exampleBody is a plausible body for schema: every property with a value
// of its type, so that one wrong field at a time is what the server sees.
func exampleBody(schema *openapi3.Schema) []byte {
	obj := map[string]any{}
	if schema != nil {
		for name, ref := range schema.Properties {
			obj[name] = exampleValue(ref.Value)
		}
	}
	raw, _ := json.Marshal(obj)
	return raw
}

func exampleValue(s *openapi3.Schema) any {
	switch {
	case s == nil:
		return "x"
	case len(s.Enum) > 0:
		return s.Enum[0]
	case s.Type.Is("string"):
		if s.Format == "uuid" {
			return "00000000-0000-4000-8000-000000000000"
		}
		return "example"
	case s.Type.Is("integer"), s.Type.Is("number"):
		return 1
	case s.Type.Is("boolean"):
		return true
	case s.Type.Is("array"):
		return []any{}
	}
	return map[string]any{}
}

// wrongValues are values of every JSON type but the schema's.
func wrongValues(s *openapi3.Schema) []any {
	all := map[string]any{"string": "wrong", "number": 12345, "boolean": true, "array": []any{1}, "object": map[string]any{"a": 1}}
	var out []any
	for _, kind := range []string{"string", "number", "boolean", "array", "object"} {
		if s == nil {
			break
		}
		if s.Type.Is(kind) || (kind == "number" && s.Type.Is("integer")) {
			continue
		}
		if s.Type == nil || len(s.Type.Slice()) == 0 {
			break // untyped: anything goes
		}
		out = append(out, all[kind])
	}
	return out
}

func isErrorModel(body []byte) bool {
	var e map[string]any
	if err := json.Unmarshal(body, &e); err != nil {
		return false
	}
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	return regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(code) && msg != ""
}
