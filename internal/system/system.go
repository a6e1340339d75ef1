// Package system answers questions about the service itself: is it
// healthy, and what is it.
package system

import (
	"context"
	"maps"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

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

	pings singleflight.Group
	mu    sync.Mutex
	// checked is the last ping's report, made at checkedAt.
	checked   *Health
	checkedAt time.Time
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

// HealthEvery is how long a database check stands. GET /api/health is
// public and anyone may call it as often as they like; the database is
// pinged at most once per interval per server, by one caller while the
// others wait for its result. Load balancers probe every few seconds, so
// a second of staleness changes nothing they see, and requests to the
// route no longer turn into database round trips.
const HealthEvery = time.Second

// pingTimeout bounds a ping, so that a hung database turns into a
// failing check rather than a hung health probe.
const pingTimeout = 2 * time.Second

// Health reports the database's health: a ping, made at most once per
// HealthEvery, and recent write failures (SQLite's disk full), which a
// ping cannot see and which are read on every call. A report is shared
// while it stands: callers must not change it.
func (s *Service) Health(ctx context.Context) *Health {
	h := s.pinged(ctx)
	if werr := s.db.WriteFailure(ctx); werr != nil {
		return h.withWriteFailure(werr, s.now())
	}
	return h
}

// pinged returns the standing ping report, or pings for a new one.
// Callers that arrive during a ping share it, and a caller that goes
// away does not cut it short for the others.
func (s *Service) pinged(ctx context.Context) *Health {
	s.mu.Lock()
	h, at := s.checked, s.checkedAt
	s.mu.Unlock()
	if age := s.now().Sub(at); h != nil && age >= 0 && age < HealthEvery {
		return h
	}
	v, _, _ := s.pings.Do("ping", func() (any, error) { return s.ping(context.WithoutCancel(ctx)), nil })
	return v.(*Health)
}

func (s *Service) ping(ctx context.Context) *Health {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	start := s.now()
	err := s.db.Ping(ctx)
	end := s.now()
	c := Check{Status: "pass", ObservedValue: float64(end.Sub(start).Microseconds()) / 1000, ObservedUnit: "ms", Time: start.UTC().Format(time.RFC3339)}
	if err != nil {
		c.Status, c.Output = "fail", "database unreachable"
	}
	h := &Health{Status: c.Status, Version: s.build.Version, Checks: map[string][]Check{"database:responseTime": {c}}}
	s.mu.Lock()
	s.checked, s.checkedAt = h, end
	s.mu.Unlock()
	return h
}

// withWriteFailure returns a copy of h that fails on err.
func (h *Health) withWriteFailure(err error, now time.Time) *Health {
	checks := maps.Clone(h.Checks)
	checks["database:writes"] = []Check{{Status: "fail", Output: "writes are failing: " + err.Error(),
		ObservedUnit: "ms", Time: now.UTC().Format(time.RFC3339)}}
	return &Health{Status: "fail", Version: h.Version, Checks: checks}
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
