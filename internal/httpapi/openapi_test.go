package httpapi

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestAPIDocuments builds what /api/openapi.json and /api/schemas serve:
// the handler builds them on first request, so a broken fragment must
// fail here rather than there.
func TestAPIDocuments(t *testing.T) {
	docs, err := apiDocs()
	if err != nil {
		t.Fatal(err)
	}
	if len(docs.openapi) == 0 || len(docs.schemas.docs) == 0 || len(docs.schemas.index) == 0 {
		t.Fatalf("empty documents: %d bytes of OpenAPI, %d schemas", len(docs.openapi), len(docs.schemas.docs))
	}
}

// TestOpenAPIOperations holds every operation to what the client-side
// linter (scripts/api-client.sh) also checks, so a new route fails here
// first: it says who may call it, belongs to a declared tag, and
// documents a client error in the shared error model.
func TestOpenAPIOperations(t *testing.T) {
	docs, err := apiDocs()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tags  []struct{ Name string }               `json:"tags"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(docs.openapi, &doc); err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		declared[tag.Name] = true
	}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			name := strings.ToUpper(method) + " " + path
			var op struct {
				Tags      []string                   `json:"tags"`
				Security  *[]map[string][]string     `json:"security"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if op.Security == nil {
				t.Errorf("%s: no security (use [] for a public route)", name)
			}
			if len(op.Tags) == 0 || !declared[op.Tags[0]] {
				t.Errorf("%s: tags %v, want one declared in a fragment's tags", name, op.Tags)
			}
			if !slices.ContainsFunc(slices.Collect(maps.Keys(op.Responses)), func(code string) bool { return strings.HasPrefix(code, "4") }) {
				t.Errorf("%s: documents no 4xx response", name)
			}
		}
	}
}
