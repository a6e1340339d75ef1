package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/towerdefence/platformctl/internal/system"
)

func handleHello() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond(w, http.StatusOK, map[string]string{"message": "Hello from the platform API"})
	})
}

func handleHealth(sys *system.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sys.Health(r.Context())
		status := http.StatusOK
		if !h.Healthy() {
			status = http.StatusServiceUnavailable
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, status, h)
	})
}

func handleMeta(sys *system.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond(w, http.StatusOK, sys.Meta())
	})
}

// handleAPIDocument serves one of the API documents (the OpenAPI
// document, the index of the JSON Schemas), built on first request.
func handleAPIDocument(log *slog.Logger, pick func(*documents) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		docs, err := apiDocs()
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(pick(docs)) //nolint:errcheck // the client went away
	})
}
