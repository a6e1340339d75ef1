package httpapi

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"

	"sigs.k8s.io/yaml"
)

// The OpenAPI document is assembled from one YAML fragment per area so that
// each area documents its own routes and schemas next to the others. A
// fragment may hold `tags` (declaring the tags its operations use), `paths`
// and `components`; 00-base.yaml holds the rest.
//
//go:embed openapi/*.yaml
var openapiFragments embed.FS

// documents are the OpenAPI document and the JSON Schemas derived from it,
// as served.
type documents struct {
	openapi []byte
	schemas *schemaSet
}

// apiDocs builds the served documents on first use and keeps them. They
// are static, but assembling them parses every fragment and allocates
// several MiB, so a starting server does not pay for it before it is ready
// and a server nobody asks for them never holds them. TestAPIDocuments
// keeps a broken fragment from getting this far.
var apiDocs = sync.OnceValues(func() (*documents, error) {
	openapi, err := OpenAPIDocument()
	if err != nil {
		return nil, err
	}
	schemas, err := jsonSchemas(openapi)
	if err != nil {
		return nil, err
	}
	return &documents{openapi: openapi, schemas: schemas}, nil
})

// OpenAPIDocument returns the assembled OpenAPI 3.1 document as JSON.
func OpenAPIDocument() ([]byte, error) {
	doc, err := assembleOpenAPI(openapiFragments)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

func assembleOpenAPI(fsys fs.FS) (map[string]any, error) {
	names, err := fs.Glob(fsys, "openapi/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	doc := map[string]any{}
	for _, name := range names {
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var frag map[string]any
		if err := yaml.Unmarshal(raw, &frag); err != nil {
			return nil, fmt.Errorf("openapi fragment %s: %w", path.Base(name), err)
		}
		if err := mergeFragment(doc, frag, path.Base(name)); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// mergeFragment copies frag into doc. Top-level keys other than tags, paths
// and components may appear in one fragment only; tags are appended in
// fragment order, paths and each components section are merged key by key,
// and a tag or key defined twice is an error.
func mergeFragment(doc, frag map[string]any, name string) error {
	for key, val := range frag {
		switch key {
		case "tags":
			if err := mergeTags(doc, val, name); err != nil {
				return err
			}
		case "paths":
			if err := mergeKeys(doc, "paths", val, name); err != nil {
				return err
			}
		case "components":
			comps, _ := val.(map[string]any)
			dst, _ := doc["components"].(map[string]any)
			if dst == nil {
				dst = map[string]any{}
				doc["components"] = dst
			}
			for section, entries := range comps {
				if err := mergeKeys(dst, section, entries, name); err != nil {
					return err
				}
			}
		default:
			if _, dup := doc[key]; dup {
				return fmt.Errorf("openapi fragment %s: top-level %q is already defined", name, key)
			}
			doc[key] = val
		}
	}
	return nil
}

func mergeTags(doc map[string]any, val any, name string) error {
	tags, ok := val.([]any)
	if !ok {
		return fmt.Errorf("openapi fragment %s: tags must be a list", name)
	}
	have, _ := doc["tags"].([]any)
	for _, t := range tags {
		tag, _ := t.(map[string]any)
		tagName, _ := tag["name"].(string)
		if tagName == "" {
			return fmt.Errorf("openapi fragment %s: a tag needs a name", name)
		}
		for _, h := range have {
			if h.(map[string]any)["name"] == tagName {
				return fmt.Errorf("openapi fragment %s: tag %q is already defined", name, tagName)
			}
		}
		have = append(have, tag)
	}
	doc["tags"] = have
	return nil
}

func mergeKeys(parent map[string]any, section string, val any, name string) error {
	src, ok := val.(map[string]any)
	if !ok {
		return fmt.Errorf("openapi fragment %s: %s must be a mapping", name, section)
	}
	dst, _ := parent[section].(map[string]any)
	if dst == nil {
		dst = map[string]any{}
		parent[section] = dst
	}
	for k, v := range src {
		if _, dup := dst[k]; dup {
			return fmt.Errorf("openapi fragment %s: %s %q is already defined", name, section, k)
		}
		dst[k] = v
	}
	return nil
}
