package httpapi

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/oasdiff/checker"
	"github.com/oasdiff/oasdiff/diff"
	"github.com/oasdiff/oasdiff/load"
)

// TestContractCompatible compares the served OpenAPI document with the
// published contract of its API version, testdata/contract/v<version>.json,
// and fails on every change that can break a client built against it: a
// removed route, response or field, a narrowed type or range, a new
// required request field. Such a change needs a new API version
// (info.version in openapi/00-base.yaml), whose contract -update records.
// -update also records compatible changes, so what was added is protected
// from then on; it never records a breaking one. docs/clients.md states
// the policy.
func TestContractCompatible(t *testing.T) {
	docs, err := apiDocs()
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Info struct{ Version string } `json:"info"`
	}
	if err := json.Unmarshal(docs.openapi, &info); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "contract", "v"+info.Info.Version+".json")
	published, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && *update:
		writeContract(t, path, docs.openapi)
		return
	case errors.Is(err, fs.ErrNotExist):
		t.Fatalf("API version %s has no published contract %s; record it with\n  go test ./internal/httpapi -run TestContract -update", info.Info.Version, path)
	case err != nil:
		t.Fatal(err)
	}
	breaking, err := breakingChanges(published, docs.openapi)
	if err != nil {
		t.Fatal(err)
	}
	if len(breaking) > 0 {
		t.Fatalf("the served document breaks the published contract %s:\n  %s\n"+
			"Keep the old shape (add instead of change), or bump info.version in openapi/00-base.yaml "+
			"and record the new contract with -update; see docs/clients.md.",
			path, strings.Join(breaking, "\n  "))
	}
	if *update {
		writeContract(t, path, docs.openapi)
	}
}

// breakingChanges lists, one line each, the changes from published to
// served that oasdiff rates as breaking. A response field that disappears
// counts even when it was optional: a client may read it.
func breakingChanges(published, served []byte) ([]string, error) {
	base, err := load.NewSpecInfoFromData(openapi3.NewLoader(), published, "published.json")
	if err != nil {
		return nil, err
	}
	revision, err := load.NewSpecInfoFromData(openapi3.NewLoader(), served, "served.json")
	if err != nil {
		return nil, err
	}
	report, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), base, revision)
	if err != nil {
		return nil, err
	}
	config := checker.NewConfig(checker.GetAllChecks(), checker.WithSeverityLevels(map[string]checker.Level{
		checker.ResponseOptionalPropertyRemovedId: checker.ERR,
	}))
	l := checker.NewDefaultLocalizer()
	var out []string
	for _, c := range checker.CheckBackwardCompatibilityUntilLevel(config, report, sources, checker.ERR) {
		out = append(out, c.SingleLineError(l, checker.ColorNever))
	}
	return out, nil
}

func writeContract(t *testing.T, path string, doc []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(indentJSON(t, doc), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBreakingChanges shows the check catches what the policy names, and
// lets additions through.
func TestBreakingChanges(t *testing.T) {
	docs, err := apiDocs()
	if err != nil {
		t.Fatal(err)
	}
	schema := func(doc map[string]any, name string) map[string]any {
		return doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	}
	props := func(doc map[string]any, name string) map[string]any {
		return schema(doc, name)["properties"].(map[string]any)
	}
	for _, tc := range []struct {
		name     string
		change   func(doc map[string]any)
		breaking bool
	}{
		{"response field removed", func(doc map[string]any) { delete(props(doc, "Lobby"), "code") }, true},
		{"optional response field removed", func(doc map[string]any) { delete(props(doc, "LobbyMember"), "ready") }, true},
		{"type narrowed", func(doc map[string]any) {
			props(doc, "CreateLobbyRequest")["queue"] = map[string]any{"type": "string", "maxLength": 3}
		}, true},
		{"required request field added", func(doc map[string]any) {
			s := schema(doc, "CreateLobbyRequest")
			props(doc, "CreateLobbyRequest")["region"] = map[string]any{"type": "string"}
			s["required"] = append(s["required"].([]any), "region")
		}, true},
		{"route removed", func(doc map[string]any) { delete(doc["paths"].(map[string]any), "/api/player/social") }, true},
		{"optional request field added", func(doc map[string]any) {
			props(doc, "CreateLobbyRequest")["region"] = map[string]any{"type": "string"}
		}, false},
		{"response field added", func(doc map[string]any) {
			props(doc, "LobbyMember")["team"] = map[string]any{"type": "integer"}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var doc map[string]any
			if err := json.Unmarshal(docs.openapi, &doc); err != nil {
				t.Fatal(err)
			}
			tc.change(doc)
			changed, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			breaking, err := breakingChanges(docs.openapi, changed)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(breaking) > 0; got != tc.breaking {
				t.Fatalf("breaking = %v, want %v: %q", got, tc.breaking, breaking)
			}
		})
	}
}
