// Package system answers questions about the service itself: is it
// healthy, and what is it.
package system

import (
	"context"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
)

// APIPrefix is the path prefix of every route.
const APIPrefix = "/api"

// Pinger checks a dependency.
type Pinger interface {
	Ping(ctx context.Context) error
	// WriteFailure reports a recent write refused for a reason a ping
	// cannot see (SQLite's disk full), or nil.
	WriteFailure(ctx context.Context) error
}

// Check is the result of one health check, in the style of the IETF
// health-check draft.
type Check struct {
	Status        string  `json:"status"` // pass or fail
	ObservedValue float64 `json:"observedValue"`
	ObservedUnit  string  `json:"observedUnit"`
	Output        string  `json:"output,omitempty"`
	Time          string  `json:"time"`
}

// Health is the overall health report.
type Health struct {
	Status  string             `json:"status"` // pass or fail
	Version string             `json:"version"`
	Checks  map[string][]Check `json:"checks"`
}

// Healthy reports whether every check passed.
func (h Health) Healthy() bool { return h.Status == "pass" }

// Service reports health and metadata.
type Service struct {
	build   platform.Build
	env     string
	dialect string
	db      Pinger
	now     func() time.Time
	extra   map[string]any
}

// Options describe the running service.
type Options struct {
	Build platform.Build
	// Env is the environment (development or production).
	Env string
	// Dialect names the database (sqlite or postgres).
	Dialect string
}

// New returns the system service over the database db.
func New(db Pinger, opts Options, now func() time.Time) *Service {
	return &Service{build: opts.Build, env: opts.Env, dialect: opts.Dialect, db: db, now: now, extra: map[string]any{}}
}

// AddMeta publishes an extra field in /api/meta. Call it while wiring, before serving.
func (s *Service) AddMeta(key string, value any) { s.extra[key] = value }

// Health pings the database within two seconds so a hung database turns
// into a failing check rather than a hung health probe.
func (s *Service) Health(ctx context.Context) Health {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := s.now()
	err := s.db.Ping(ctx)
	elapsed := s.now().Sub(start)
	c := Check{Status: "pass", ObservedValue: float64(elapsed.Microseconds()) / 1000, ObservedUnit: "ms", Time: start.UTC().Format(time.RFC3339)}
	h := Health{Status: "pass", Version: s.build.Version, Checks: map[string][]Check{"database:responseTime": {c}}}
	if err != nil {
		c.Status, c.Output = "fail", "database unreachable"
		h.Status = "fail"
		h.Checks["database:responseTime"] = []Check{c}
	}
	if werr := s.db.WriteFailure(ctx); werr != nil {
		h.Status = "fail"
		h.Checks["database:writes"] = []Check{{Status: "fail", Output: "writes are failing: " + werr.Error(),
			ObservedUnit: "ms", Time: start.UTC().Format(time.RFC3339)}}
	}
	return h
}

// Meta returns the service metadata merged with the extra fields.
func (s *Service) Meta() map[string]any {
	m := map[string]any{
		"name":        "platformctl",
		"version":     s.build.Version,
		"commit":      s.build.Commit,
		"buildTime":   s.build.Date,
		"apiPrefix":   APIPrefix,
		"environment": s.env,
		"database":    s.dialect,
	}
	for k, v := range s.extra {
		m[k] = v
	}
	return m
}
