package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/towerdefence/platformctl/internal/httpapi"
)

var (
	loadOnce  sync.Once
	docRouter routers.Router
	loadErr   error
)

// Document returns the parsed and validated OpenAPI document.
func Document() (*openapi3.T, error) {
	raw, err := httpapi.OpenAPIDocument()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("parse OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("invalid OpenAPI document: %w", err)
	}
	return doc, nil
}

func router() (routers.Router, error) {
	loadOnce.Do(func() {
		doc, err := Document()
		if err != nil {
			loadErr = err
			return
		}
		// Match on path only: the test server's host is not in `servers`.
		doc.Servers = nil
		docRouter, loadErr = gorillamux.NewRouter(doc)
	})
	return docRouter, loadErr
}

// validateResponse checks r against the operation that documents req. A
// 404 or 405 for an undocumented path or method must still be an Error body.
func validateResponse(req *http.Request, r *Response) error {
	rt, err := router()
	if err != nil {
		return err
	}
	probe := req.Clone(context.Background())
	probe.Host = ""
	probe.URL.Scheme, probe.URL.Host = "", ""
	route, params, err := rt.FindRoute(probe)
	if err != nil {
		if r.Status == http.StatusNotFound || r.Status == http.StatusMethodNotAllowed {
			return validateErrorBody(r.Body)
		}
		return fmt.Errorf("route is not documented: %w", err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    probe,
			PathParams: params,
			Route:      route,
		},
		Status: r.Status,
		Header: r.Header,
		Body:   io.NopCloser(bytes.NewReader(r.Body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	if r.Status == http.StatusNotModified {
		return nil
	}
	return openapi3filter.ValidateResponse(context.Background(), in)
}

func validateErrorBody(body []byte) error {
	var e map[string]any
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	if code == "" || msg == "" {
		return fmt.Errorf("error body lacks code or message")
	}
	return nil
}
