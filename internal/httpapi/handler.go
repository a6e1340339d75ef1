// Package httpapi is the HTTP face of the services: routing, decoding,
// the error model and the middleware stack. Handlers only translate: parse
// the request, call one service method, render the result.
package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"strings"

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
	Log *slog.Logger
	// AccessLog, when set, is where the access log's info lines go, as
	// the JSON lines Log's JSON handler would write, formatted without
	// slog's per-attribute work (see accessLog); when nil they go
	// through Log.
	AccessLog io.Writer
	Config    *config.Config
	System    *system.Service
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
	routes := newRouteTable()
	addRoutes(routes, d)
	routes.checkExemptions()
	c := pipelineConfig{log: d.Log, accessJSON: d.AccessLog, exempt: routes.exempt}
	if d.Config != nil {
		c.timeout = d.Config.RequestTimeout
	}
	if d.Metrics != nil {
		c.metrics = d.Metrics.forRoutes(routes.patterns)
	}
	return newPipeline(c, routes.ServeMux)
}

// routeTable is the mux, remembering the patterns registered on it, so
// that the metrics set up each route's series once, and the paths served
// without the request deadline.
type routeTable struct {
	*http.ServeMux
	patterns []string
	// withoutDeadline holds the exact paths served without the request
	// deadline; withoutDeadlineUnder the parents of the patterns whose
	// last segment is a wildcard ("/api/schemas/" for
	// "/api/schemas/{name}"), exempting every path one segment under
	// them. exemptPatterns are the patterns registered so.
	withoutDeadline      map[string]bool
	withoutDeadlineUnder []string
	exemptPatterns       map[string]bool
}

func newRouteTable() *routeTable {
	return &routeTable{ServeMux: http.NewServeMux(), withoutDeadline: map[string]bool{}, exemptPatterns: map[string]bool{}}
}

// Handle registers h for pattern.
func (t *routeTable) Handle(pattern string, h http.Handler) {
	t.ServeMux.Handle(pattern, h)
	t.patterns = append(t.patterns, pattern)
}

// HandleWithoutDeadline registers h for pattern, a method and a path
// that is exact (a trailing {$} allowed) or ends in one wildcard segment,
// exempt from the request deadline: h answers from memory and bounds its
// rare waits itself, or is a stream, which bounds its setup
// (setupDeadline). For a route served from memory the deadline's timer
// and request copy took 3.8 µs of the 73 µs of CPU time of a queues
// request in `scripts/bench.sh side` (a quarter of the stack in
// BenchmarkQueuesPipeline), and there is nothing for it to bound.
func (t *routeTable) HandleWithoutDeadline(pattern string, h http.Handler) {
	_, path, _ := strings.Cut(pattern, " ")
	path = strings.TrimSuffix(path, "{$}")
	cut := strings.LastIndex(path, "/") + 1
	parent, last := path[:cut], path[cut:]
	switch {
	case !strings.Contains(path, "{"):
		t.withoutDeadline[path] = true
	case !strings.Contains(parent, "{") && strings.HasPrefix(last, "{") && strings.HasSuffix(last, "}") &&
		!strings.HasSuffix(last, "...}"):
		t.withoutDeadlineUnder = append(t.withoutDeadlineUnder, parent)
	default:
		panic("httpapi: a route without the request deadline needs an exact path or one final wildcard: " + pattern)
	}
	t.exemptPatterns[pattern] = true
	t.Handle(pattern, h)
}

// checkExemptions panics if a route registered with the request deadline
// has a path the exemptions cover (another method on an exempt path, a
// fixed path beside an exempt wildcard): it would run without one.
func (t *routeTable) checkExemptions() {
	for _, p := range t.patterns {
		_, path, _ := strings.Cut(p, " ")
		if !t.exemptPatterns[p] && t.exemptPath(strings.TrimSuffix(path, "{$}")) {
			panic("httpapi: route " + p + " would be served without the request deadline by another route's exemption")
		}
	}
}

// exempt tells the deadline step the requests for paths registered with
// HandleWithoutDeadline.
func (t *routeTable) exempt(r *http.Request) bool { return t.exemptPath(r.URL.Path) }

func (t *routeTable) exemptPath(path string) bool {
	if t.withoutDeadline[path] {
		return true
	}
	for _, parent := range t.withoutDeadlineUnder {
		if rest, ok := strings.CutPrefix(path, parent); ok && rest != "" && !strings.Contains(rest, "/") {
			return true
		}
	}
	return false
}
