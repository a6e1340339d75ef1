package httpapi

import (
	"net/http"
)

// addRoutes is the whole API surface, readable top to bottom. Paths that
// match no pattern get a JSON 404, and a wrong method a JSON 405 with
// Allow (see jsonMuxErrors).
func addRoutes(mux *http.ServeMux, d Deps, openapi []byte) {
	mux.Handle("GET /api", handleHello())
	mux.Handle("GET /api/{$}", handleHello())
	mux.Handle("GET /api/health", handleHealth(d.System))
	mux.Handle("GET /api/meta", handleMeta(d.System))
	mux.Handle("GET /api/openapi.json", handleOpenAPI(openapi))
	mux.Handle("GET /api/matchmaking/queues", handleQueues(d.Log, d.Matchmaking))
}
