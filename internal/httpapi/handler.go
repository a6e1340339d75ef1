// Package httpapi is the HTTP face of the services: routing, decoding,
// the error model and the middleware stack. Handlers only translate: parse
// the request, call one service method, render the result.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/qa"
	"github.com/towerdefence/platformctl/internal/system"
)

// Deps are the services the API exposes.
type Deps struct {
	Log    *slog.Logger
	Config *config.Config
	System *system.Service
	// Matchmaking serves GET /api/matchmaking/queues.
	Matchmaking *matchmaking.Service
	// Metrics, when set, records request counts and latencies.
	Metrics *Metrics
	// Auth checks sessions of both realms (see requirePlayer, requireAdmin).
	Auth *auth.Service
	// Social serves provider and guest sign-in, linking and unlinking.
	Social *auth.Social
	// Players serves the catalog and the player meta state.
	Players *player.Service
	// Profile runs the email-confirmed profile changes.
	Profile *profile.Service
	// Lifecycle deletes, exports and suspends accounts.
	Lifecycle *lifecycle.Service
	// LiveOps serves the live-ops configuration; Console the admin
	// console's bootstrap; Testing the testing metadata.
	LiveOps *liveops.Service
	Console *admin.Console
	Testing *qa.Testing
	// Admin is the administrator plane behind /api/admin.
	Admin *admin.Service
	// Events holds the players' event streams; StreamTimings their clocks.
	Events        *events.Hub
	StreamTimings StreamTimings
}

// NewHandler returns the whole API: every route of routes.go behind the
// middleware of newPipeline.
func NewHandler(d Deps) http.Handler {
	routes := &routeTable{ServeMux: http.NewServeMux()}
	addRoutes(routes, d)
	c := pipelineConfig{log: d.Log, long: isStream}
	if d.Config != nil {
		c.timeout = d.Config.RequestTimeout
	}
	if d.Metrics != nil {
		c.metrics = d.Metrics.forRoutes(routes.patterns)
	}
	return newPipeline(c, routes.ServeMux)
}

// routeTable is the mux, remembering the patterns registered on it, so
// that the metrics set up each route's series once.
type routeTable struct {
	*http.ServeMux
	patterns []string
}

// Handle registers h for pattern.
func (t *routeTable) Handle(pattern string, h http.Handler) {
	t.ServeMux.Handle(pattern, h)
	t.patterns = append(t.patterns, pattern)
}
