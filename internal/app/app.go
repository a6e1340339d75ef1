// Package app is the composition root: it builds every service from a
// Config, once, for both `serve` and the operator commands.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/httpapi"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/system"
)

// App holds the services of one process.
type App struct {
	Config *config.Config
	Log    *slog.Logger
	Build  platform.Build
	DB     *store.DB
	Audit  *audit.Log
	System *system.Service
	// Now is the clock every service uses.
	Now func() time.Time
	// Metrics is the Prometheus registry served on PLATFORM_METRICS_ADDR.
	Metrics *prometheus.Registry

	httpMetrics *httpapi.Metrics
}

// PendingMigrationsError is returned when the database schema is behind
// the binary and the App may not migrate it.
type PendingMigrationsError struct{ Pending []string }

func (e *PendingMigrationsError) Error() string {
	return fmt.Sprintf("the database has %d pending migration(s) (%s): run `platformctl migrate up`, or start serve with --migrate",
		len(e.Pending), strings.Join(e.Pending, ", "))
}

// New opens the database and builds the services. On the embedded SQLite
// database pending migrations are applied at once; on PostgreSQL only when
// cfg.Migrate is set, because there schema changes belong to the deploy
// pipeline.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, build platform.Build) (*App, error) {
	if err := cfg.EnsureSecret(); err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Log: log, Build: build, DB: db, Now: time.Now}
	if err := a.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	a.Audit = audit.New(db.Audit(), a.Now)
	a.System = system.New(build, cfg.Env, db.Dialect(), db, a.Now)
	a.Metrics = prometheus.NewRegistry()
	a.Metrics.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(db.SQL(), db.Dialect()),
	)
	a.httpMetrics = httpapi.NewMetrics(a.Metrics)
	return a, nil
}

func (a *App) migrate(ctx context.Context) error {
	m, err := a.DB.Migrator()
	if err != nil {
		return err
	}
	pending, err := m.Pending(ctx)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	if a.DB.Dialect() == store.Postgres && !a.Config.Migrate {
		return &PendingMigrationsError{Pending: pending}
	}
	applied, err := m.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	a.Log.Info("applied migrations", "count", len(applied))
	return nil
}

// Handler returns the HTTP API.
func (a *App) Handler() (http.Handler, error) {
	return httpapi.NewHandler(httpapi.Deps{
		Log:     a.Log,
		Config:  a.Config,
		System:  a.System,
		Metrics: a.httpMetrics,
	})
}

// Run runs the background workers until ctx is done.
func (a *App) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// MetricsHandler serves the registry in the Prometheus text format.
func (a *App) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{Registry: a.Metrics})
}

// Close releases the database.
func (a *App) Close() error {
	return errors.Join(a.DB.Close())
}
