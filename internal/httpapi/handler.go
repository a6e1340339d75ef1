// Package httpapi is the HTTP face of the services: routing, decoding,
// the error model and the middleware stack. Handlers only translate: parse
// the request, call one service method, render the result.
package httpapi

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/profile"
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
	// Players serves the catalog and the player meta state.
	Players *player.Service
	// Profile runs the email-confirmed profile changes.
	Profile *profile.Service
	// LiveOps serves the live-ops configuration; Console the admin
	// console's bootstrap; Testing the testing metadata.
	LiveOps *liveops.Service
	Console *liveops.Console
	Testing *liveops.Testing
	// Admin is the administrator plane behind /api/admin.
	Admin *admin.Service
	// Events holds the players' event streams; StreamTimings their clocks.
	Events        *events.Hub
	StreamTimings StreamTimings
}

// NewHandler returns the whole API: every route of routes.go behind the
// middleware stack (see stack).
func NewHandler(d Deps) http.Handler {
	routes := &routeTable{ServeMux: http.NewServeMux()}
	addRoutes(routes, d)
	s := &stack{log: d.Log, long: isStream, mux: routes.ServeMux}
	if d.Config != nil {
		s.timeout = d.Config.RequestTimeout
	}
	if d.Metrics != nil {
		s.metrics = d.Metrics.forRoutes(routes.patterns())
	}
	s.exact = routes.exactRoutes(s.metrics)
	return s
}

// routeTable is the mux, remembering the routes registered on it: the
// metrics set up each route's series once, and the routes whose pattern
// is a method and a path without wildcards are found by the path alone
// (see stack.exactRoute).
type routeTable struct {
	*http.ServeMux
	routes []exactRoute
}

// Handle registers h for pattern.
func (t *routeTable) Handle(pattern string, h http.Handler) {
	t.ServeMux.Handle(pattern, h)
	t.routes = append(t.routes, exactRoute{pattern: pattern, handler: h})
}

func (t *routeTable) patterns() []string {
	p := make([]string, len(t.routes))
	for i, rt := range t.routes {
		p[i] = rt.pattern
	}
	return p
}

// exactRoute is a registered route; in the stack's table of exact routes,
// one whose pattern is a method and a path without wildcards, a trailing
// slash (a subtree) or a host.
type exactRoute struct {
	method, pattern string
	handler         http.Handler
	metrics         *routeMetrics // nil without metrics
}

// exactRoutes returns the exact routes by path.
func (t *routeTable) exactRoutes(metrics *routeMetricsTable) map[string][]exactRoute {
	exact := map[string][]exactRoute{}
	for _, rt := range t.routes {
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "{") {
			continue
		}
		rt.method = method
		if metrics != nil {
			rt.metrics = metrics.routes[rt.pattern]
		}
		exact[path] = append(exact[path], rt)
	}
	return exact
}
