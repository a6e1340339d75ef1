// Package app is the composition root: it builds every service from a
// Config, once, for both `serve` and the operator commands.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
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
	"github.com/towerdefence/platformctl/internal/eventspg"
	"github.com/towerdefence/platformctl/internal/httpapi"
	"github.com/towerdefence/platformctl/internal/jobs"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/qa"
	"github.com/towerdefence/platformctl/internal/role"
	"github.com/towerdefence/platformctl/internal/secretbox"
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
	// Social signs players in through identity providers and as guests.
	Social *auth.Social
	// Keyring seals what must be read back (TOTP seeds) under keys derived
	// from the secret and its previous values.
	Keyring *secretbox.Keyring
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
	Admins  *role.Admins
	Console *admin.Console
	Testing *qa.Testing
	// Profile runs the email-confirmed profile, email and password changes.
	Profile *profile.Service
	// Lifecycle deletes, exports and suspends accounts.
	Lifecycle *lifecycle.Service
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
	Gauges *admin.Gauges
	// Events holds the players' event streams; services publish the
	// changes they commit through eventPub.
	Events   *events.Hub
	eventPub *events.Publisher

	httpMetrics *httpapi.Metrics
}

// PendingMigrationsError is returned when the database schema is behind
// the binary and the App may not migrate it.
type PendingMigrationsError struct {
	Pending []string
	// Serve is set when serve refused to start, which --migrate overrides.
	Serve bool
}

func (e *PendingMigrationsError) Error() string {
	fix := "run `platformctl migrate up`"
	if e.Serve {
		fix += ", or start serve with --migrate"
	}
	return fmt.Sprintf("the database has %d pending migration(s) (%s): %s",
		len(e.Pending), strings.Join(e.Pending, ", "), fix)
}

// New opens the database and builds every service of `serve`. On the
// embedded SQLite database pending migrations are applied at once; on
// PostgreSQL only when cfg.Migrate is set, because there schema changes
// belong to the deploy pipeline.
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
	if err := migrate(ctx, db, log, cfg.Migrate || db.Dialect() == store.SQLite); err != nil {
		if pm, ok := errors.AsType[*PendingMigrationsError](err); ok {
			pm.Serve = true
		}
		return nil, err
	}
	return assemble(ctx, cfg, log, build, db, true)
}

// NewSupport builds the services a support command calls over db, which
// the caller opened; Close closes it. It never migrates: a database with
// pending migrations is a PendingMigrationsError on SQLite as on
// PostgreSQL. It builds no metrics registry and no event hub, and starts
// nothing: the mail worker and the job runner are there for the commands
// that wake or run them once (token issue, mail retry, prune).
func NewSupport(ctx context.Context, cfg *config.Config, log *slog.Logger, build platform.Build, db *store.DB) (*App, error) {
	if err := cfg.EnsureSecret(); err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, log, false); err != nil {
		return nil, err
	}
	return assemble(ctx, cfg, log, build, db, false)
}

// assemble builds the services over an open, migrated database, each from
// the ones before it: audit and accounts, mail, the event transport,
// sessions, live-ops and the player services, the event hub, the console,
// profile changes, and the jobs that sweep after all of them. serving
// adds what only `serve` uses: the metrics registry and the event hub.
func assemble(ctx context.Context, cfg *config.Config, log *slog.Logger, build platform.Build, db *store.DB, serving bool) (*App, error) {
	now := time.Now
	auditLog := audit.New(db.Audit(), now)
	sys := system.New(db, system.Options{Build: build, Env: cfg.Env, Dialect: db.Dialect()}, now)
	gauges := admin.NewGauges(db.LiveOps(), now)
	var metrics *metricSet
	if serving {
		metrics = newMetricSet(ctx, db, build, log, gauges)
	}
	accounts := account.New(db.Accounts(), newHasher(cfg), now)
	composer, worker, err := newMail(cfg, db, log, metrics.mailAttempts(), now)
	if err != nil {
		return nil, err
	}
	transport, publisher := newEventTransport(cfg, db, log)
	keyring, err := secretbox.New(cfg.Secret, cfg.PreviousSecrets...)
	if err != nil {
		return nil, err
	}
	wa, err := newWebAuthn(cfg)
	if err != nil {
		return nil, err
	}
	sessions := newAuth(cfg, db, accounts, mailer{composer, worker}, publisher, factorKeys{keyring, wa}, now)
	social, err := newSocial(cfg, sessions, db)
	if err != nil {
		return nil, err
	}
	queues := matchmaking.Presets()
	liveOps := newLiveOps(cfg, db, now)
	players := newPlayers(cfg, db, queues, liveOps, publisher, now)
	addPlayerMeta(sys)
	var hub *events.Hub
	if serving {
		hub = events.New(events.Deps{Players: players, Auth: sessions, Transport: transport, Log: log}, events.Options{
			PerSession: cfg.EventsPerSession, PerPlayer: cfg.EventsPerPlayer, Global: cfg.EventsMaxStreams, Buffer: eventBuffer,
			Metrics: metrics.events})
		publisher.DeliverTo(hub)
	}
	profiles, err := profile.New(profile.Deps{
		Store: db.Profiles(), Accounts: accounts, Composer: composer, Wake: worker.Wake,
		Origins: sessions.Origins(), Audit: auditLog,
	}, profile.Options{Secret: cfg.Secret, TokenTTL: cfg.TokenTTL, RateLimit: cfg.ProfileRateLimit, RateWindow: profileRateWindow,
		Limiter: db.RateLimits(), Watcher: sessions}, now)
	if err != nil {
		return nil, err
	}
	lifecycles := lifecycle.New(lifecycle.Deps{Store: db.Lifecycle(), Auth: sessions, Players: players, Mailer: mailer{composer, worker}}, lifecycle.Options{
		Secret: cfg.Secret, BaseURL: cfg.BaseURL, FreshAge: cfg.FreshAge, TokenTTL: deletionLinkTTL,
		Quarantine: cfg.DeletionQuarantine, ConfirmByMail: cfg.SMTPURL != ""}, now)
	a := &App{
		Config: cfg, Log: log, Build: build, DB: db, Now: now,
		Audit: auditLog, System: sys,
		Accounts: accounts, Auth: sessions, Social: social, Keyring: keyring,
		MailComposer: composer, MailWorker: worker, Outbox: mail.NewOutbox(db.Mail(), auditLog, now),
		Queues: queues, Players: players, LiveOps: liveOps,
		Seeder:      seed.New(seed.Deps{Store: db.Seed(), Accounts: accounts, Players: players}, queues, now),
		Admins:      newAdmins(db, sessions, now),
		Console:     newConsole(cfg, db, build, gauges, queues, liveOps, auditLog, now),
		Testing:     newTesting(cfg, accounts),
		Profile:     profiles,
		Lifecycle:   lifecycles,
		Matchmaking: matchmaking.New(liveOps),
		Gauges:      gauges,
		Events:      hub,
		eventPub:    publisher,
	}
	if serving {
		a.Metrics, a.httpMetrics = metrics.registry, metrics.http
	}
	a.AdminPlane = admin.New(admin.Deps{Store: db.Admin(), Auth: sessions, Profile: profiles, Outbox: a.Outbox,
		Audit: auditLog, LiveOps: liveOps, Admins: a.Admins, Queues: queueIDs(queues)})
	a.Jobs = jobs.New(jobs.Deps{Claims: db.JobRuns(), Log: log}, a.jobList(), jobs.Options{Lease: cfg.Jobs.Lease}, now)
	return a, nil
}

// queueIDs are the ids of the queue presets.
func queueIDs(queues []matchmaking.Queue) []string {
	ids := make([]string, len(queues))
	for i, q := range queues {
		ids[i] = q.ID
	}
	return ids
}

// deletionLinkTTL is the life of a mailed account deletion link, as
// better-auth's.
const deletionLinkTTL = 24 * time.Hour

// profileRateWindow is the window of the profile change request limits.
const profileRateWindow = time.Hour

// metricSet is the Prometheus registry of a serving process and the
// metrics the services report into.
type metricSet struct {
	registry *prometheus.Registry
	http     *httpapi.Metrics
	events   *events.Metrics
	process  *processMetrics
}

// newMetricSet registers the process, pool, HTTP and event stream metrics
// and the monitor that reports the gauges at scrape time.
func newMetricSet(ctx context.Context, db *store.DB, build platform.Build, log *slog.Logger, gauges *admin.Gauges) *metricSet {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(db.SQL(), db.Dialect()),
	)
	m := &metricSet{
		registry: reg,
		http:     httpapi.NewMetrics(reg),
		events:   events.NewMetrics(reg),
		process:  newProcessMetrics(reg, build),
	}
	reg.MustRegister(newMonitorCollector(ctx, log, gauges))
	return m
}

// mailAttempts is what the mail worker tells of each delivery attempt:
// nothing without a registry.
func (m *metricSet) mailAttempts() func(mail.Outcome) {
	if m == nil {
		return nil
	}
	return m.process.observeMailAttempt
}

// newHasher is the password hasher of the configured cost, admitting
// hashes as the settings allow.
func newHasher(cfg *config.Config) *account.Hasher {
	return account.NewHasher(account.Argon2Params{
		MemoryKiB: cfg.Argon2MemoryKiB, Iterations: cfg.Argon2Iterations, Parallelism: cfg.Argon2Parallelism,
	}, account.Admission{Wait: cfg.Jobs.HashWait, PerClient: cfg.Jobs.HashPerClient})
}

// newAuth sets up sessions, sign-in and the mailed flows, with attempt
// limits shared through the database by every replica.
func newAuth(cfg *config.Config, db *store.DB, accounts *account.Service, m mailer, watcher *events.Publisher, keys factorKeys, now func() time.Time) *auth.Service {
	return auth.New(auth.Deps{Store: db.Sessions(), Accounts: accounts, Mailer: m}, auth.Options{
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
		Limiter:            db.RateLimits(),
		AnonymousMailFloor: anonymousMailFloor,
		Watcher:            watcher,
		CacheSize:          cfg.SessionCacheSize,
		Factors:            db.Factors(),
		Keyring:            keys.keyring,
		FreshAge:           cfg.FreshAge,
		Issuer:             totpIssuer,
		Passkeys:           db.Factors(),
		WebAuthn:           keys.webAuthn,
		// In production no administrator works on a password alone.
		AdminsNeedSecondFactor: cfg.IsProduction(),
	}, now)
}

// factorKeys are what second factors need beyond the store: the keyring
// that seals TOTP seeds and the passkeys' relying party (nil: no passkeys).
type factorKeys struct {
	keyring  *secretbox.Keyring
	webAuthn *webauthn.WebAuthn
}

// newWebAuthn configures passkeys: the relying party id and origins from
// the settings, else the base URL's host name and origin. It returns nil
// (passkeys off) when neither names a domain.
func newWebAuthn(cfg *config.Config) (*webauthn.WebAuthn, error) {
	base, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	rpID, origins := cfg.PasskeyRPID, cfg.PasskeyOrigins
	if rpID == "" {
		rpID = base.Hostname()
		if net.ParseIP(rpID) != nil {
			// An IP address is no relying party id: without settings, a
			// service reached by address has no passkeys.
			return nil, nil
		}
	}
	if len(origins) == 0 {
		origins = []string{base.Scheme + "://" + base.Host}
	}
	wa, err := webauthn.New(&webauthn.Config{RPID: rpID, RPDisplayName: totpIssuer, RPOrigins: origins})
	if err != nil {
		return nil, fmt.Errorf("PLATFORM_PASSKEY_RP_ID / PLATFORM_PASSKEY_ORIGINS: %w", err)
	}
	return wa, nil
}

// totpIssuer names the service in authenticator apps.
const totpIssuer = "Tower Defence"

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

// newLiveOps is the live-ops configuration service.
func newLiveOps(cfg *config.Config, db *store.DB, now func() time.Time) *liveops.Service {
	return liveops.New(db.LiveOps(), liveops.Options{
		Environment: cfg.Env, Catalog: db.LiveOps(),
		DefaultShortSeed: cfg.MapSeedShort, DefaultLongSeed: cfg.MapSeedLong,
		SeedRefresh: cfg.LiveOpsRefresh, ReadTimeout: cfg.RequestTimeout,
	}, now)
}

// newPlayers is the player meta state: decks, friends and lobbies.
func newPlayers(cfg *config.Config, db *store.DB, queues []matchmaking.Queue, liveOps *liveops.Service, ev *events.Publisher, now func() time.Time) *player.Service {
	limits := player.DefaultLimits
	limits.MaxFriends = cfg.FriendLimit
	return player.New(player.Deps{Store: db.Player(), LiveOps: liveOps, Events: ev}, queues,
		player.Options{Limits: limits, LobbyIdleTimeout: cfg.LobbyIdleTimeout, CatalogRefresh: cfg.LiveOpsRefresh,
			ReadTimeout: cfg.RequestTimeout}, now)
}

// addPlayerMeta publishes in /api/meta the facts clients need about the
// player services.
func addPlayerMeta(sys *system.Service) {
	sys.AddMeta("social", player.StateMachine())
	sys.AddMeta("deckCode", player.DeckCodeInfo())
	sys.AddMeta("lobby", player.LobbyInfo())
}

// eventBuffer is how many events a stream may have waiting for a slow
// client before it is closed as lagging.
const eventBuffer = 16

// newEventTransport picks how change notices reach every serve process:
// PostgreSQL LISTEN/NOTIFY when several processes may share the database,
// an in-process channel on the embedded SQLite database.
func newEventTransport(cfg *config.Config, db *store.DB, log *slog.Logger) (events.Transport, *events.Publisher) {
	var t events.Transport
	if db.Dialect() == store.Postgres {
		t = eventspg.New(db.SQL(), cfg.DatabaseURL, log)
	} else {
		local := events.NewLocal()
		local.Share(noticeLog{db.SessionNotices()}, 0) // news from commands run beside serve
		t = local
	}
	return t, events.NewPublisher(t, log)
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

// newConsole builds the admin console's bootstrap over the gauges the
// counter job refreshes.
func newConsole(cfg *config.Config, db *store.DB, build platform.Build, gauges *admin.Gauges, queues []matchmaking.Queue,
	liveOps *liveops.Service, auditLog *audit.Log, now func() time.Time) *admin.Console {
	return admin.NewConsole(admin.ConsoleDeps{
		Store:    gauges,
		Counters: admin.Counters{PendingProfileChanges: gauges, MailOutbox: gauges, OpenLobbies: gauges},
		LiveOps:  liveOps,
		Audit:    auditLog,
	}, admin.ConsoleOptions{
		Queues:       queues,
		Build:        build,
		Environment:  cfg.Env,
		Database:     db.Dialect(),
		TestingTools: cfg.TestingTools,
		StartedAt:    now(),
	}, now)
}

// newTesting serves QA's testing metadata. It reads the embedded fixtures
// only when it is served, and not before it is first asked for.
func newTesting(cfg *config.Config, accounts *account.Service) *qa.Testing {
	var source qa.FixtureSource
	if cfg.TestingTools {
		source = qa.NewLazy(embeddedFixtures, accounts)
	}
	return qa.New(cfg.Env, qa.ToolSwitches{
		TestingTools: cfg.TestingTools,
		MailLog:      cfg.SMTPURL == "" && !cfg.IsProduction(),
	}, source)
}

// newMail sets up the message composer and the outbox's delivery worker.
// Without an SMTP URL (only allowed in development) messages are written
// to the log, links included, instead of being dropped.
func newMail(cfg *config.Config, db *store.DB, log *slog.Logger, onAttempt func(mail.Outcome), now func() time.Time) (*mail.Composer, *mail.Worker, error) {
	composer, err := mail.NewComposer(cfg.Secret, now)
	if err != nil {
		return nil, nil, err
	}
	var sender mail.Sender = mail.LogSender{Log: log, ShowLinks: !cfg.IsProduction()}
	if cfg.SMTPURL != "" {
		smtp, err := mail.NewSMTPSender(mail.SMTPConfig{URL: cfg.SMTPURL, From: cfg.MailFrom})
		if err != nil {
			return nil, nil, &config.Error{Setting: "PLATFORM_SMTP_URL", Problem: err.Error()}
		}
		sender = smtp
	}
	worker := mail.NewWorker(mail.WorkerDeps{Store: db.Mail(), Composer: composer, Sender: sender, Log: log}, mail.WorkerOptions{
		PollInterval: cfg.MailPollInterval,
		BackoffBase:  cfg.MailRetryBase,
		Lease:        cfg.MailLease,
		// The worker wants the lease to cover two conversations; keep
		// the 30s default when the lease allows it.
		SendTimeout: min(30*time.Second, cfg.MailLease/2),
		OnAttempt:   onAttempt,
	}, now)
	return composer, worker, nil
}

// migrate applies the pending migrations when apply is set, and otherwise
// returns a PendingMigrationsError naming them.
func migrate(ctx context.Context, db *store.DB, log *slog.Logger, apply bool) error {
	m, err := db.Migrator()
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
	if !apply {
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
	log.Info("applied migrations", "count", len(applied))
	return nil
}

// Handler returns the HTTP API. accessLog, when not nil, takes the access
// log's info lines directly as JSON (httpapi.Deps.AccessLog): serve
// passes the writer under its JSON log handler.
func (a *App) Handler(accessLog io.Writer) http.Handler {
	return httpapi.NewHandler(httpapi.Deps{
		Log:         a.Log,
		AccessLog:   accessLog,
		Config:      a.Config,
		System:      a.System,
		Matchmaking: a.Matchmaking,
		Metrics:     a.httpMetrics,
		Auth:        a.Auth,
		Social:      a.Social,
		Players:     a.Players,
		Profile:     a.Profile,
		Lifecycle:   a.Lifecycle,
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

// newAdmins changes administrators' roles, ending the sessions a change
// of role makes stale.
func newAdmins(db *store.DB, sessions *auth.Service, now func() time.Time) *role.Admins {
	admins := role.NewAdmins(db.Admin(), now)
	admins.Sessions = sessions
	return admins
}
