package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/httpapi"
)

func newServeCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API under /api",
		Long: "Serve the HTTP API under /api until SIGINT or SIGTERM, then stop accepting connections,\n" +
			"let in-flight requests finish within --shutdown-timeout, and close the database.\n\n" +
			"Every setting can come from a flag or from its PLATFORM_* environment variable;\n" +
			"flags win over the environment, which wins over the defaults. serve is the only\n" +
			"command that takes the server settings; docs/configuration.md lists them all.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd, e)
			if err != nil {
				return err
			}
			log, logs := newBufferedLogger(func(e *env) *slog.Logger { return newLogger(cfg, e) }, e)
			defer logs.Close()
			ctx := cmd.Context()
			a, err := app.New(ctx, cfg, log, e.build)
			if err != nil {
				return err
			}
			defer a.Close()
			if err := a.SeedEmptySQLite(ctx); err != nil {
				return err
			}
			// JSON access lines go straight into the buffer under the
			// JSON handler, in the same format (httpapi.Deps.AccessLog).
			var accessLog io.Writer
			if jsonLogs(cfg) {
				accessLog = logs
			}
			return serve(ctx, a, accessLog)
		},
	}
	bindSettings(cmd, config.GroupsAll...)
	return cmd
}

// serve runs the API and the background workers until ctx is cancelled;
// accessLog is as for app.App.Handler.
func serve(ctx context.Context, a *app.App, accessLog io.Writer) error {
	handler := a.Handler(accessLog)
	ln, err := net.Listen("tcp", a.Config.Addr)
	if err != nil {
		return withExit(ExitFailure, fmt.Errorf("listen on %s: %w", a.Config.Addr, err))
	}
	srv := httpapi.NewServer(handler)
	// Event streams never go idle by themselves: end them when the drain
	// starts, so that Shutdown can finish.
	srv.RegisterOnShutdown(a.Events.Shutdown)
	var metricsSrv *http.Server
	if a.Config.MetricsAddr != "" {
		mln, err := net.Listen("tcp", a.Config.MetricsAddr)
		if err != nil {
			ln.Close()
			return withExit(ExitFailure, fmt.Errorf("listen on metrics address %s: %w", a.Config.MetricsAddr, err))
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", a.MetricsHandler())
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go metricsSrv.Serve(mln) //nolint:errcheck // ends with ErrServerClosed at shutdown
		a.Log.Info("serving metrics", "addr", mln.Addr().String())
		defer metricsSrv.Close()
	}

	workersCtx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	workersDone := make(chan error, 1)
	go func() { workersDone <- a.Run(workersCtx) }()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	a.Log.Info("serving", "addr", ln.Addr().String(), "base_url", a.Config.BaseURL,
		"env", a.Config.Env, "database", a.DB.Dialect(), "version", a.Build.Version)

	select {
	case err := <-serveErr:
		stopWorkers()
		<-workersDone
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	a.Log.Info("shutting down", "drain_timeout_seconds", a.Config.ShutdownTimeout.Seconds())
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.Config.ShutdownTimeout)
	defer cancel()
	shutdownErr := srv.Shutdown(drainCtx)
	a.Events.Wait(drainCtx) // streams run off their requests: let them write their last event
	stopWorkers()
	workerErr := <-workersDone
	if errors.Is(shutdownErr, context.DeadlineExceeded) {
		a.Log.Warn("drain timeout passed with requests still running")
		srv.Close()
	}
	a.Log.Info("stopped")
	return errors.Join(workerErr, ignoreDeadline(shutdownErr))
}

func ignoreDeadline(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
