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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/httpapi"
	"github.com/towerdefence/platformctl/internal/jobs"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/qa"
	"github.com/towerdefence/platformctl/internal/seed"
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
	// Accounts owns users and passwords; Auth owns sessions on top of it.
	Accounts *account.Service
	Auth     *auth.Service
	// MailComposer renders and seals messages for the outbox; services
	// that send mail compose with it and enqueue in their own transaction.
	MailComposer *mail.Composer
	// MailWorker delivers the outbox while Run runs; services call its
	// Wake after committing a message so it goes out at once.
	MailWorker *mail.Worker
	// Outbox is the support view of the outbox.
	Outbox *mail.Outbox
	// Queues are the matchmaking queue presets; Players owns decks,
	// friends and lobbies; LiveOps the live-ops configuration; Seeder
	// applies the fixtures.
	Queues  []matchmaking.Queue
	Players *player.Service
	LiveOps *liveops.Service
	Seeder  *seed.Seeder
	// Admins changes administrators' roles; Console builds the admin
	// console's bootstrap; Testing serves QA's testing metadata.
	Admins  *liveops.Admins
	Console *liveops.Console
	Testing *liveops.Testing
	// Profile runs the email-confirmed profile, email and password changes.
	Profile *profile.Service
	// AdminPlane is the administrator plane the admin API, the console and
	// the support commands call.
	AdminPlane *admin.Service
	// Matchmaking serves the queue presets and their maps.
	Matchmaking *matchmaking.Service
	// Now is the clock every service uses.
	Now func() time.Time
	// Metrics is the Prometheus registry served on PLATFORM_METRICS_ADDR.
	Metrics *prometheus.Registry
	// Jobs runs the periodic sweeps, once per period across replicas.
	Jobs *jobs.Runner
	// Gauges are the database-wide figures of the metrics and the admin
	// bootstraps, measured by the counter job.
	Gauges *liveops.Gauges
	// Events holds the players' event streams; services publish the
	// changes they commit through eventPub.
	Events         *events.Hub
	eventPub       *events.Publisher
	eventTransport events.Transport
	eventMetrics   *events.Metrics

	httpMetrics    *httpapi.Metrics
	processMetrics *processMetrics
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
//
// The services are built in dependency order, each step from the ones
// before it: accounts, mail, sessions, player and live-ops, the console,
// profile changes, then the jobs that sweep after all of them. Services
// that change what players see publish through the event transport.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, build platform.Build) (_ *App, err error) {
	if err := cfg.EnsureSecret(); err != nil {
		return nil, err
	}
	db, err := store.OpenPool(ctx, cfg.DatabaseURL, store.Pool(cfg.DBPool))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	a := &App{Config: cfg, Log: log, Build: build, DB: db, Now: time.Now}
	if err := a.migrate(ctx); err != nil {
		return nil, err
	}
	a.Audit = audit.New(db.Audit(), a.Now)
	a.System = system.New(build, cfg.Env, db.Dialect(), db, a.Now)
	a.buildMetrics(ctx)
	a.Accounts = account.NewService(db.Accounts(), account.NewHasher(account.Argon2Params{
		MemoryKiB: cfg.Argon2MemoryKiB, Iterations: cfg.Argon2Iterations, Parallelism: cfg.Argon2Parallelism,
	}, account.Admission{Wait: cfg.Jobs.HashWait, PerClient: cfg.Jobs.HashPerClient}), a.Now)
	if err := a.buildMail(); err != nil {
		return nil, err
	}
	a.buildEventTransport()
	a.buildAuth()
	a.buildPlayer()
	a.Events = events.NewHub(a.Players, a.Auth, a.eventTransport, log, events.Options{
		PerSession: cfg.EventsPerSession, PerPlayer: cfg.EventsPerPlayer, Global: cfg.EventsMaxStreams, Buffer: eventBuffer,
		Metrics: a.eventMetrics})
	a.eventPub.DeliverTo(a.Events)
	a.Matchmaking = matchmaking.New(a.LiveOps)
	a.buildLiveOps()
	a.Profile, err = profile.New(db.Profiles(), a.Accounts, a.MailComposer, a.MailWorker.Wake, a.Auth.Origins(), a.Audit,
		profile.Options{Secret: cfg.Secret, TokenTTL: cfg.TokenTTL, RateLimit: cfg.ProfileRateLimit, RateWindow: profileRateWindow,
			Limiter: db.RateLimits(), Watcher: a.eventPub}, a.Now)
	if err != nil {
		return nil, err
	}
	a.AdminPlane = admin.New(admin.Deps{Store: db.Admin(), Auth: a.Auth, Profile: a.Profile, Outbox: a.Outbox,
		Audit: a.Audit, LiveOps: a.LiveOps, Admins: a.Admins})
	a.Jobs = jobs.New(a.jobList(), db.JobRuns(), cfg.Jobs.Lease, log, a.Now)
	return a, nil
}

// profileRateWindow is the window of the profile change request limits.
const profileRateWindow = time.Hour

// buildMetrics registers the process, pool, HTTP and event stream
// metrics and the monitors that read the outbox and sessions at scrape
// time.
func (a *App) buildMetrics(ctx context.Context) {
	a.Metrics = prometheus.NewRegistry()
	a.Metrics.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(a.DB.SQL(), a.DB.Dialect()),
	)
	a.httpMetrics = httpapi.NewMetrics(a.Metrics)
	a.eventMetrics = events.NewMetrics(a.Metrics)
	a.processMetrics = newProcessMetrics(a.Metrics, a.Build)
	a.Gauges = liveops.NewGauges(a.DB.LiveOps(), a.Now)
	a.Metrics.MustRegister(newMonitorCollector(ctx, a.Log, a.Gauges))
}

// buildAuth sets up sessions, sign-in and the mailed flows, with attempt
// limits shared through the database by every replica.
func (a *App) buildAuth() {
	cfg := a.Config
	a.Auth = auth.NewService(a.DB.Sessions(), a.Accounts, mailer{a.MailComposer, a.MailWorker}, auth.Options{
		Secret:             cfg.Secret,
		SessionTTL:         cfg.SessionTTL,
		RefreshAfter:       cfg.SessionRefreshAfter,
		PlayerCookiePrefix: cfg.PlayerCookiePrefix,
		AdminCookiePrefix:  cfg.AdminCookiePrefix,
		SecureCookies:      cfg.SecureCookies(),
		TrustedOrigins:     cfg.TrustedOrigins,
		BaseURL:            cfg.BaseURL,
		TokenTTL:           cfg.TokenTTL,
		Limits: auth.Limits{
			LoginIP: cfg.RateLimitLoginIP, LoginAccount: cfg.RateLimitLoginAccount,
			MailIP: cfg.RateLimitMailIP, MailAccount: cfg.RateLimitMailAccount,
		},
		Limiter:            a.DB.RateLimits(),
		AnonymousMailFloor: anonymousMailFloor,
		Watcher:            a.eventPub,
	}, a.Now)
}

// anonymousMailFloor is how long an anonymous request for a verification
// or password-reset mail takes at least, so that a quick answer does not
// reveal that no account has the address.
const anonymousMailFloor = 300 * time.Millisecond

// mailer lets services compose a message and wake the worker after
// enqueueing it.
type mailer struct {
	*mail.Composer
	*mail.Worker
}

// buildPlayer wires the player meta state: live-ops, the player service,
// the seeder, and the facts /api/meta publishes about them.
func (a *App) buildPlayer() {
	a.Queues = matchmaking.Presets()
	a.LiveOps = liveops.NewService(a.DB.LiveOps(), a.Now, liveops.Options{
		Environment: a.Config.Env, Catalog: a.DB.LiveOps(),
		DefaultShortSeed: a.Config.MapSeedShort, DefaultLongSeed: a.Config.MapSeedLong,
		SeedRefresh: a.Config.LiveOpsRefresh,
	})
	limits := player.DefaultLimits
	limits.MaxFriends = a.Config.FriendLimit
	a.Players = player.New(a.DB.Player(), a.Queues, a.LiveOps, player.Options{
		Limits: limits, LobbyIdleTimeout: a.Config.LobbyIdleTimeout, Now: a.Now, Events: a.eventPub})
	a.Seeder = seed.New(a.DB.Seed(), a.Accounts, a.Players, a.Queues, a.Now)
	a.System.AddMeta("social", player.StateMachine())
	a.System.AddMeta("deckCode", player.DeckCodeInfo())
	a.System.AddMeta("lobby", player.LobbyInfo())
}

// eventBuffer is how many events a stream may have waiting for a slow
// client before it is closed as lagging.
const eventBuffer = 16

// buildEventTransport picks how change notices reach every serve process:
// PostgreSQL LISTEN/NOTIFY when several processes may share the database,
// an in-process channel on the embedded SQLite database.
func (a *App) buildEventTransport() {
	if a.DB.Dialect() == store.Postgres {
		a.eventTransport = events.NewPostgres(a.DB.SQL(), a.Config.DatabaseURL, a.Log)
	} else {
		a.eventTransport = events.NewLocal()
	}
	a.eventPub = events.NewPublisher(a.eventTransport, a.Log)
}

// SeedEmptySQLite applies the embedded fixtures to an embedded database
// that has none yet, so a fresh `serve` works out of the box; serve calls
// it after New, as New applies the embedded database's migrations.
// PostgreSQL deployments seed explicitly with `platformctl seed fixtures`.
func (a *App) SeedEmptySQLite(ctx context.Context) error {
	if a.DB.Dialect() != store.SQLite {
		return nil
	}
	head, err := a.DB.Player().CatalogHead(ctx)
	if err != nil || head != nil {
		return err
	}
	set, err := embeddedFixtures()
	if err != nil {
		return err
	}
	report, err := a.Seeder.Seed(ctx, set, seed.Options{World: !a.Config.IsProduction()})
	if err != nil {
		return fmt.Errorf("seed the empty database: %w", err)
	}
	a.Log.Info("seeded the empty database with the embedded fixtures", "items", len(report.Items), "world", !a.Config.IsProduction())
	return nil
}

// embeddedFixtures loads the fixtures built into the binary.
func embeddedFixtures() (*seed.Set, error) {
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		return nil, fmt.Errorf("embedded fixtures: %v", ps)
	}
	return set, nil
}

// buildLiveOps sets up the admin console, role changes and the testing
// metadata on top of the live-ops service buildPlayer made.
func (a *App) buildLiveOps() {
	lo := a.DB.LiveOps()
	a.Admins = liveops.NewAdmins(lo, a.Now)
	a.Console = liveops.NewConsole(liveops.ConsoleDeps{
		Store:        a.Gauges,
		Queues:       a.Queues,
		Counters:     liveops.Counters{PendingProfileChanges: a.Gauges, MailOutbox: a.Gauges, OpenLobbies: a.Gauges},
		LiveOps:      a.LiveOps,
		Audit:        a.Audit,
		Build:        a.Build,
		Environment:  a.Config.Env,
		Database:     a.DB.Dialect(),
		TestingTools: a.Config.TestingTools,
		StartedAt:    a.Now(),
		Now:          a.Now,
	})
	// The testing metadata reads the embedded fixtures, only when it is
	// served, and not before it is first asked for.
	var source liveops.FixtureSource
	if a.Config.TestingTools {
		source = qa.NewLazy(embeddedFixtures, a.Accounts)
	}
	a.Testing = liveops.NewTesting(a.Config.Env, liveops.ToolSwitches{
		TestingTools: a.Config.TestingTools,
		MailLog:      a.Config.SMTPURL == "" && !a.Config.IsProduction(),
	}, source)
}

// buildMail sets up the outbox and its worker. Without an SMTP URL (only
// allowed in development) messages are written to the log, links
// included, instead of being dropped.
func (a *App) buildMail() error {
	composer, err := mail.NewComposer(a.Config.Secret, a.Now)
	if err != nil {
		return err
	}
	var sender mail.Sender = mail.LogSender{Log: a.Log, ShowLinks: !a.Config.IsProduction()}
	if a.Config.SMTPURL != "" {
		smtp, err := mail.NewSMTPSender(mail.SMTPConfig{URL: a.Config.SMTPURL, From: a.Config.MailFrom})
		if err != nil {
			return &config.Error{Setting: "PLATFORM_SMTP_URL", Problem: err.Error()}
		}
		sender = smtp
	}
	a.MailComposer = composer
	a.MailWorker = mail.NewWorker(a.DB.Mail(), composer, sender, a.Log, a.Now, mail.WorkerOptions{
		PollInterval: a.Config.MailPollInterval,
		BackoffBase:  a.Config.MailRetryBase,
		Lease:        a.Config.MailLease,
		// The worker wants the lease to cover two conversations; keep
		// the 30s default when the lease allows it.
		SendTimeout: min(30*time.Second, a.Config.MailLease/2),
		OnAttempt:   a.processMetrics.observeMailAttempt,
	})
	a.Outbox = mail.NewOutbox(a.DB.Mail(), a.Audit, a.Now)
	return nil
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
		files := make([]string, len(pending))
		for i, p := range pending {
			files[i] = p.File
		}
		return &PendingMigrationsError{Pending: files}
	}
	applied, err := m.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	a.Log.Info("applied migrations", "count", len(applied))
	return nil
}

// Handler returns the HTTP API.
func (a *App) Handler() http.Handler {
	return httpapi.NewHandler(httpapi.Deps{
		Log:         a.Log,
		Config:      a.Config,
		System:      a.System,
		Matchmaking: a.Matchmaking,
		Metrics:     a.httpMetrics,
		Auth:        a.Auth,
		Players:     a.Players,
		Profile:     a.Profile,
		LiveOps:     a.LiveOps,
		Console:     a.Console,
		Testing:     a.Testing,
		Admin:       a.AdminPlane,
		Events:      a.Events,
		StreamTimings: httpapi.StreamTimings{
			Heartbeat: a.Config.EventsHeartbeat, WriteTimeout: a.Config.EventsWriteTimeout, Retry: a.Config.EventsRetry},
	})
}

// Run runs the mail worker and the periodic jobs until ctx is done: the
// mail worker hands back a message it is in the middle of sending before
// Run returns.
func (a *App) Run(ctx context.Context) error {
	var workers sync.WaitGroup
	workers.Go(func() { a.MailWorker.Run(ctx) })
	workers.Go(func() { a.Jobs.Run(ctx) })
	workers.Go(func() { a.Events.Run(ctx) })
	workers.Wait()
	return nil
}

// MetricsHandler serves the registry in the Prometheus text format.
func (a *App) MetricsHandler() http.Handler {
	return promhttp.InstrumentMetricHandler(a.Metrics, promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{Registry: a.Metrics}))
}

// Close releases the database.
func (a *App) Close() error {
	return errors.Join(a.DB.Close())
}
