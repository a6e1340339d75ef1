// Package httpapi is the HTTP face of the services: routing, decoding,
// the error model and the middleware stack. Handlers only translate: parse
// the request, call one service method, render the result.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/urfave/negroni/v3"

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
	// Events holds the players' event streams; StreamTimings their clocks.
	Events        *events.Hub
	StreamTimings StreamTimings
}

// NewHandler returns the whole API: every route of routes.go behind the
// middleware stack.
func NewHandler(d Deps) http.Handler {
	mux := http.NewServeMux()
	addRoutes(mux, d)

	n := negroni.New()
	n.Use(withRequestID())
	n.Use(accessLog(d.Log))
	n.Use(recoverPanics(d.Log))
	n.Use(limitBody(maxBodyBytes))
	if d.Config != nil && d.Config.RequestTimeout > 0 {
		n.Use(limitDuration(d.Config.RequestTimeout, isStream))
	}
	if d.Metrics != nil {
		n.Use(d.Metrics.middleware())
	}
	n.Use(guardAuthPaths())
	n.UseHandler(jsonMuxErrors(mux))
	return n
}
