package httpapi

import (
	"net/http"

	"github.com/towerdefence/platformctl/internal/role"
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

	// Profile changes, each confirmed by email (package profile).
	mux.Handle("POST /api/profile/request-profile-change", requirePlayer(d, handleRequestProfileChange(d)))
	mux.Handle("POST /api/profile/request-email-change", requirePlayer(d, handleRequestEmailChange(d)))
	mux.Handle("POST /api/profile/request-password-change", requirePlayer(d, handleRequestPasswordChange(d)))
	mux.Handle("POST /api/profile/confirm-change", handleConfirmChange(d))

	mux.Handle("GET /api/admin/bootstrap", requirePermission(d, role.ConsoleRead, handleAdminBootstrap(d)))
	mux.Handle("GET /api/liveops/admin-bootstrap", requirePermission(d, role.LiveOpsRead, handleLiveOpsAdminBootstrap(d)))
	mux.Handle("GET /api/testing/legacy-tools", handleTestingTools(d))
}
