package httpapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/openapi.json and record compatible changes in the contract baseline")

// TestOpenAPIGolden keeps the served document in testdata/openapi.json, so
// every change to the contract shows up in review as a diff of that file.
func TestOpenAPIGolden(t *testing.T) {
	docs, err := apiDocs()
	if err != nil {
		t.Fatal(err)
	}
	pretty := append(indentJSON(t, docs.openapi), '\n')
	path := filepath.Join("testdata", "openapi.json")
	if *update {
		if err := os.WriteFile(path, pretty, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/httpapi -run 'TestOpenAPI|TestContract' -update to create it)", err)
	}
	if !bytes.Equal(pretty, want) {
		t.Errorf("the served OpenAPI document differs from %s; if the change is intended, run\n"+
			"  go test ./internal/httpapi -run 'TestOpenAPI|TestContract' -update\nand review the diff", path)
	}
}

// indentJSON returns doc indented by two spaces, for files people diff.
func indentJSON(t *testing.T, doc []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
