package httpapi

import "testing"

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
