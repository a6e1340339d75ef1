package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/towerdefence/platformctl/internal/platform"
)

// The OpenAPI 3.1 document's schemas are JSON Schema 2020-12, so clients
// that validate payloads get each named schema as a standalone document:
// the schema itself as the root, and every schema it references, directly
// or not, under $defs.
const schemaPrefix = "#/components/schemas/"

// schemaSet holds the rendered JSON Schema documents by name.
type schemaSet struct {
	docs  map[string][]byte
	index []byte
}

// schemaIndex lists the published schemas.
type schemaIndex struct {
	Schemas []schemaRef `json:"schemas"`
}

type schemaRef struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// jsonSchemas renders every component schema of the OpenAPI document.
func jsonSchemas(openapi []byte) (*schemaSet, error) {
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi, &doc); err != nil {
		return nil, fmt.Errorf("json schemas: %w", err)
	}
	all := doc.Components.Schemas
	set := &schemaSet{docs: make(map[string][]byte, len(all))}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	idx := schemaIndex{Schemas: make([]schemaRef, 0, len(names))}
	for _, name := range names {
		defs := map[string]any{}
		collectRefs(all, all[name], defs)
		root := map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"$id":     "/api/schemas/" + name + ".json",
			"title":   name,
		}
		body, _ := rewriteRefs(all[name]).(map[string]any)
		for k, v := range body {
			root[k] = v
		}
		if len(defs) > 0 {
			rewritten := make(map[string]any, len(defs))
			for k, v := range defs {
				rewritten[k] = rewriteRefs(v)
			}
			root["$defs"] = rewritten
		}
		raw, err := json.Marshal(root)
		if err != nil {
			return nil, fmt.Errorf("json schema %s: %w", name, err)
		}
		set.docs[name] = raw
		idx.Schemas = append(idx.Schemas, schemaRef{Name: name, URL: "/api/schemas/" + name + ".json"})
	}
	index, err := json.Marshal(idx)
	if err != nil {
		return nil, err
	}
	set.index = index
	return set, nil
}

// collectRefs adds every schema v references, transitively, to defs.
func collectRefs(all map[string]any, v any, defs map[string]any) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok && strings.HasPrefix(ref, schemaPrefix) {
			name := strings.TrimPrefix(ref, schemaPrefix)
			if _, seen := defs[name]; !seen {
				defs[name] = all[name]
				collectRefs(all, all[name], defs)
			}
		}
		for _, child := range t {
			collectRefs(all, child, defs)
		}
	case []any:
		for _, child := range t {
			collectRefs(all, child, defs)
		}
	}
}

// rewriteRefs returns a copy of v whose component references point at
// $defs, or at the root for a schema that references itself.
func rewriteRefs(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, child := range t {
			if s, ok := child.(string); ok && k == "$ref" && strings.HasPrefix(s, schemaPrefix) {
				out[k] = "#/$defs/" + strings.TrimPrefix(s, schemaPrefix)
				continue
			}
			out[k] = rewriteRefs(child)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, child := range t {
			out[i] = rewriteRefs(child)
		}
		return out
	}
	return v
}

// handleSchema serves /api/schemas/{name}.json (the suffix is optional).
func handleSchema(log *slog.Logger) http.Handler {
	answers := sync.OnceValues(func() (map[string]*answer, error) {
		docs, err := apiDocs()
		if err != nil {
			return nil, err
		}
		m := make(map[string]*answer, len(docs.schemas.docs))
		for name, doc := range docs.schemas.docs {
			m[name] = newAnswer("application/schema+json", doc, answerOptions{cacheControl: "public, max-age=300"})
		}
		return m, nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		byName, err := answers()
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		name := strings.TrimSuffix(r.PathValue("name"), ".json")
		a, ok := byName[name]
		if !ok {
			respondErr(w, r, log, platform.Errorf(platform.KindNotFound, platform.CodeNotFound, "No schema named %q; GET /api/schemas lists them", name))
			return
		}
		a.serve(w, r)
	})
}
