// Package config defines every setting of platformctl, its default, its
// PLATFORM_* environment variable and its flag, and validates the result.
// Precedence is defaults < environment < flags. There are no globals: the
// CLI builds one Config per command and passes it down.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// Environments.
const (
	EnvDevelopment = "development"
	EnvProduction  = "production"
)

// MinSecretLen is the shortest PLATFORM_SECRET accepted, in bytes.
const MinSecretLen = 32

// Config is the whole runtime configuration.
type Config struct {
	Env            string
	Addr           string
	BaseURL        string
	DataDir        string
	DatabaseURL    string
	Secret         string
	TrustedOrigins []string
	TrustedProxies []netip.Prefix
	SMTPURL        string
	MailFrom       string
	LogFormat      string
	LogLevel       slog.Level
	// Migrate lets serve apply pending migrations on PostgreSQL.
	Migrate bool
	// ShutdownTimeout bounds how long serve drains in-flight requests.
	ShutdownTimeout time.Duration
	// RequestTimeout bounds how long one request may wait on the database
	// or for a password-hashing slot, so that a database that stops
	// answering (a partition, a hung server) or a burst beyond capacity
	// turns into 503 SERVICE_UNAVAILABLE instead of requests that hang.
	RequestTimeout time.Duration
	// MetricsAddr, when set, serves Prometheus metrics on its own listener.
	MetricsAddr string
	// TestingTools enables /api/testing/legacy-tools.
	TestingTools bool

	// Sessions and cookies.
	PlayerCookiePrefix  string
	AdminCookiePrefix   string
	SessionTTL          time.Duration
	SessionRefreshAfter time.Duration
	// SessionCacheSize is how many validated sessions each process keeps
	// in memory (0: none, every request reads its session).
	SessionCacheSize int

	// Rate limits of sign-in and sign-up (Login) and of the routes that
	// send mail (Mail), per client IP and per account. They are kept in
	// memory, so each process enforces its own.
	RateLimitLoginIP      ratelimit.Rule
	RateLimitLoginAccount ratelimit.Rule
	RateLimitMailIP       ratelimit.Rule
	RateLimitMailAccount  ratelimit.Rule

	// Password hashing (argon2id). Defaults sit at OWASP's minimum.
	Argon2MemoryKiB   uint32
	Argon2Iterations  uint32
	Argon2Parallelism uint8

	// TokenTTL is how long an emailed confirmation token stays valid.
	TokenTTL time.Duration
	// DeletionQuarantine is how long a deleted account's email and
	// nickname stay reserved.
	DeletionQuarantine time.Duration

	// PreviousSecrets are former values of Secret whose encrypted values
	// still decrypt (internal/secretbox), newest first.
	PreviousSecrets []string
	// FreshAge is how recently a session must have been signed in to
	// change second factors, passkeys and other sensitive settings, delete
	// the account or export its data without the password again.
	FreshAge time.Duration
	// PasskeyRPID and PasskeyOrigins are the WebAuthn relying party id and
	// the origins passkey ceremonies are accepted from; empty means the
	// base URL's host name and origin.
	PasskeyRPID    string
	PasskeyOrigins []string

	// MailPollInterval is how often an idle mail worker looks for due
	// messages; requests wake it at once, so this only bounds retries and
	// messages enqueued by other processes.
	MailPollInterval time.Duration
	// MailRetryBase is the first retry delay of a temporary delivery
	// failure; each further retry doubles it (up to 15 minutes), with jitter.
	MailRetryBase time.Duration
	// MailLease is how long a claimed message belongs to its worker: a
	// serve process that dies mid-delivery delays the message by at most
	// this, after which another worker (or the restarted one) sends it.
	// One SMTP conversation may take half of it.
	MailLease time.Duration

	// Player meta state.
	// FriendLimit caps each player's friends.
	FriendLimit int
	// LobbyIdleTimeout closes a lobby nobody acted in for this long.
	LobbyIdleTimeout time.Duration

	// ProfileRateLimit caps profile change requests per user, and
	// confirmation mails per recipient address, per hour (0 turns the
	// limits off).
	ProfileRateLimit int
	// MapSeedShort and MapSeedLong pick the maps the matchmaking queues
	// serve until live operations choose others.
	MapSeedShort uint64
	MapSeedLong  uint64

	// Player event streams: heartbeat interval, per-write deadline,
	// suggested reconnect delay, and the caps per session, per player and
	// per process.
	EventsHeartbeat    time.Duration
	EventsWriteTimeout time.Duration
	EventsRetry        time.Duration
	EventsPerSession   int
	EventsPerPlayer    int
	EventsMaxStreams   int
	// LiveOpsRefresh is how long a server plays the map seeds of the
	// live-ops version it last read, and serves the content catalog
	// version it last read, before asking the database whether another
	// process published a newer one (0: ask on every request).
	LiveOpsRefresh time.Duration
	// DBPool sizes the PostgreSQL connection pool and bounds statements;
	// GaugesRefresh is how often the counter job measures the figures the
	// metrics and the admin bootstraps show.
	DBPool        DBPool
	GaugesRefresh time.Duration

	// Jobs, retention and password-hash admission (see docs/replicas.md).
	Jobs Jobs

	// Social are the identity providers and the guests.
	Social Social

	// sources names where each explicitly set value came from: its
	// environment variable or its --flag.
	sources map[string]string
}

// DBPool are the PostgreSQL pool and statement settings. Every replica
// opens up to MaxConns connections: keep replicas × MaxConns (plus the
// operator commands') below the server's max_connections.
type DBPool struct {
	MaxConns         int
	MaxIdleConns     int
	ConnMaxLifetime  time.Duration
	ConnMaxIdleTime  time.Duration
	StatementTimeout time.Duration
	// ConnectWait is how long opening a connection keeps trying while no
	// server accepts it (a failover or switchover in progress).
	ConnectWait time.Duration
}

// Jobs are the periods of the background jobs, how long swept rows are
// kept, and how sign-ins queue for a password hash.
type Jobs struct {
	// SweepEvery is the period of the sweeps of expired sessions, tokens,
	// counters and old rows; LobbyEvery of closing idle lobbies; MailEvery
	// of giving up on overdue mail.
	SweepEvery time.Duration
	LobbyEvery time.Duration
	MailEvery  time.Duration
	// MailRetention keeps finished mail; AuditRetention keeps audit
	// entries (0: for ever).
	MailRetention  time.Duration
	AuditRetention time.Duration
	// HashWait is how long a request waits for a password-hashing slot
	// before it is answered 503; HashPerClient how many hashes one client
	// address or account may have waiting or running.
	HashWait      time.Duration
	HashPerClient int
	// Lease is how long a replica holds a job it claimed unless it renews
	// the claim (it does, every third of a lease, while the job runs).
	Lease time.Duration
	// SweepBatch is the most rows one sweep statement deletes.
	SweepBatch int
}

// Social are the identity-provider and guest settings.
type Social struct {
	// ProvidersFile names the YAML or JSON file of providers ("" for
	// none); their secrets come from the environment or from files.
	ProvidersFile string
	// ProviderTimeout bounds the calls to a provider of one request.
	ProviderTimeout time.Duration
	// GuestIP caps guest creations per client address.
	GuestIP ratelimit.Rule
	// GuestRetention is how long a guest that owns nothing may stay
	// inactive before the retention job removes it.
	GuestRetention time.Duration
	// Getenv reads the variables the providers file names for secrets.
	Getenv func(string) string
}

// Source says where the value of the setting named by its environment
// variable came from: the variable, a --flag, or "default".
func (c *Config) Source(env string) string {
	if from, ok := c.sources[env]; ok {
		return from
	}
	return "default"
}

// DatabaseSource explains where the database URL came from, for errors
// that must name it.
func (c *Config) DatabaseSource() string {
	if from, ok := c.sources["PLATFORM_DATABASE_URL"]; ok {
		return from
	}
	return "the default platform.db in PLATFORM_DATA_DIR=" + c.DataDir + " (" + c.Source("PLATFORM_DATA_DIR") + ")"
}

// Error is a configuration problem: which setting, and what is wrong.
type Error struct {
	Setting string // environment variable name
	Problem string
}

func (e *Error) Error() string { return e.Setting + ": " + e.Problem }

func settingErr(setting, format string, args ...any) *Error {
	return &Error{Setting: setting, Problem: fmt.Sprintf(format, args...)}
}

// Errors is every configuration problem found at once.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es Errors) has(setting string) bool {
	for _, e := range es {
		if e.Setting == setting {
			return true
		}
	}
	return false
}

// IsProduction reports whether the service runs in production mode.
func (c *Config) IsProduction() bool { return c.Env == EnvProduction }

// DatabaseDialect returns "postgres" or "sqlite" for the configured URL.
func (c *Config) DatabaseDialect() string {
	if isPostgresURL(c.DatabaseURL) {
		return "postgres"
	}
	return "sqlite"
}

// BaseOrigin returns scheme://host[:port] of the base URL.
func (c *Config) BaseOrigin() string {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// SecureCookies reports whether cookies must carry Secure (https base URL).
func (c *Config) SecureCookies() bool { return strings.HasPrefix(c.BaseURL, "https://") }

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// finish derives defaults that depend on other settings and validates. It
// is called once after defaults, environment and flags are applied.
func (c *Config) finish() []*Error {
	var errs []*Error
	fail := func(e *Error) { errs = append(errs, e) }
	if c.Env != EnvDevelopment && c.Env != EnvProduction {
		fail(settingErr("PLATFORM_ENV", "must be development or production, got %q", c.Env))
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		fail(settingErr("PLATFORM_ADDR", "must be host:port, got %q", c.Addr))
	}
	if c.BaseURL == "" {
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		c.BaseURL = "http://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fail(settingErr("PLATFORM_BASE_URL", "must be an absolute http(s) URL, got %q", c.BaseURL))
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.DataDir == "" {
		fail(settingErr("PLATFORM_DATA_DIR", "must not be empty"))
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = "file:" + filepath.Join(c.DataDir, "platform.db")
	}
	switch {
	case isPostgresURL(c.DatabaseURL):
		if _, err := url.Parse(c.DatabaseURL); err != nil {
			fail(settingErr("PLATFORM_DATABASE_URL", "not a valid URL"))
		}
	case strings.HasPrefix(c.DatabaseURL, "sqlite://"), strings.HasPrefix(c.DatabaseURL, "file:"):
	default:
		fail(settingErr("PLATFORM_DATABASE_URL", "must start with postgres://, postgresql://, sqlite:// or file:"))
	}
	origins := make([]string, 0, len(c.TrustedOrigins)+1)
	origins = append(origins, c.BaseOrigin())
	for _, o := range c.TrustedOrigins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		ou, err := url.Parse(o)
		if err != nil || (ou.Scheme != "http" && ou.Scheme != "https") || ou.Host == "" || ou.Path != "" {
			fail(settingErr("PLATFORM_TRUSTED_ORIGINS", "%q is not an origin like https://play.example.com", o))
			continue
		}
		origins = append(origins, ou.Scheme+"://"+ou.Host)
	}
	c.TrustedOrigins = origins
	if c.SMTPURL != "" {
		su, err := url.Parse(c.SMTPURL)
		if err != nil || (su.Scheme != "smtp" && su.Scheme != "smtps") || su.Host == "" {
			fail(settingErr("PLATFORM_SMTP_URL", "must be smtp://host:port or smtps://host:port"))
		}
	} else if c.IsProduction() {
		fail(settingErr("PLATFORM_SMTP_URL", "is required in production"))
	}
	if c.MailFrom == "" {
		fail(settingErr("PLATFORM_MAIL_FROM", "must not be empty"))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		fail(settingErr("PLATFORM_LOG_FORMAT", "must be text or json, got %q", c.LogFormat))
	}
	for _, b := range c.bounds() {
		if b.broken {
			fail(settingErr(b.setting, "%s", b.problem))
		}
	}
	if _, set := c.sources["PLATFORM_TESTING_TOOLS"]; !set {
		c.TestingTools = !c.IsProduction()
	}
	return errs
}

// bound is one limit a setting must keep.
type bound struct {
	setting string
	broken  bool
	problem string
}

// bounds are the limits of the numeric settings, checked all together.
func (c *Config) bounds() []bound {
	return []bound{
		{"PLATFORM_SHUTDOWN_TIMEOUT", c.ShutdownTimeout <= 0, "must be positive"},
		{"PLATFORM_REQUEST_TIMEOUT", c.RequestTimeout < 100*time.Millisecond, "must be at least 100ms"},
		{"PLATFORM_SESSION_TTL", c.SessionTTL < time.Hour, "must be at least 1h"},
		{"PLATFORM_SESSION_REFRESH_AFTER", c.SessionRefreshAfter <= 0 || c.SessionRefreshAfter >= c.SessionTTL, "must be positive and shorter than the session TTL"},
		{"PLATFORM_SESSION_CACHE_SIZE", c.SessionCacheSize < 0 || c.SessionCacheSize > 10_000_000, "must be 0-10000000"},
		{"PLATFORM_FRIEND_LIMIT", c.FriendLimit < 1 || c.FriendLimit > 10000, "must be 1-10000"},
		{"PLATFORM_LOBBY_IDLE_TIMEOUT", c.LobbyIdleTimeout < time.Minute, "must be at least 1m"},
		{"PLATFORM_TOKEN_TTL", c.TokenTTL < time.Minute, "must be at least 1m"},
		{"PLATFORM_DELETION_QUARANTINE", c.DeletionQuarantine < 0, "must not be negative"},
		{"PLATFORM_LIVEOPS_REFRESH", c.LiveOpsRefresh < 0 || c.LiveOpsRefresh > time.Minute, "must be between 0s and 1m"},
		{"PLATFORM_MAIL_POLL_INTERVAL", c.MailPollInterval < 10*time.Millisecond || c.MailPollInterval > time.Minute, "must be between 10ms and 1m"},
		{"PLATFORM_MAIL_RETRY_BASE", c.MailRetryBase < 10*time.Millisecond || c.MailRetryBase > 15*time.Minute, "must be between 10ms and 15m"},
		{"PLATFORM_MAIL_LEASE", c.MailLease < 2*time.Second || c.MailLease > time.Hour, "must be between 2s and 1h"},
		{"PLATFORM_PROFILE_RATE_LIMIT", c.ProfileRateLimit < 0 || c.ProfileRateLimit > 10000, "must be between 0 (off) and 10000"},
		{"PLATFORM_ADMIN_COOKIE_PREFIX", c.PlayerCookiePrefix == "" || c.AdminCookiePrefix == "" || c.PlayerCookiePrefix == c.AdminCookiePrefix, "player and admin cookie prefixes must be set and differ"},
		// OWASP: argon2id with at least 19 MiB, 2 iterations, 1 degree of parallelism.
		{"PLATFORM_ARGON2_MEMORY_KIB", c.Argon2MemoryKiB < 19*1024, "must be at least 19456 (OWASP minimum)"},
		{"PLATFORM_ARGON2_ITERATIONS", c.Argon2Iterations < 2, "must be at least 2 (OWASP minimum)"},
		{"PLATFORM_ARGON2_PARALLELISM", c.Argon2Parallelism < 1, "must be at least 1"},
		{"PLATFORM_EVENTS_HEARTBEAT", c.EventsHeartbeat < 10*time.Millisecond || c.EventsHeartbeat > 5*time.Minute, "must be between 10ms and 5m"},
		{"PLATFORM_EVENTS_WRITE_TIMEOUT", c.EventsWriteTimeout < 10*time.Millisecond || c.EventsWriteTimeout > time.Minute, "must be between 10ms and 1m"},
		{"PLATFORM_EVENTS_RETRY", c.EventsRetry < 100*time.Millisecond || c.EventsRetry > 5*time.Minute, "must be between 100ms and 5m"},
		{"PLATFORM_EVENTS_PER_SESSION", c.EventsPerSession < 1 || c.EventsPerSession > 100, "must be 1-100"},
		{"PLATFORM_EVENTS_PER_PLAYER", c.EventsPerPlayer < c.EventsPerSession || c.EventsPerPlayer > 1000, "must be from the per-session cap to 1000"},
		{"PLATFORM_EVENTS_MAX_STREAMS", c.EventsMaxStreams < 1 || c.EventsMaxStreams > 1_000_000, "must be 1-1000000"},
	}
}

// SecretDir is where a development secret is kept: next to the SQLite
// database file, unless PLATFORM_DATA_DIR is set, then in the data
// directory. So a support command pointed at the database serve uses finds
// the secret serve made, from any working directory.
func (c *Config) SecretDir() string {
	if _, set := c.sources["PLATFORM_DATA_DIR"]; set || c.DatabaseDialect() != "sqlite" {
		return c.DataDir
	}
	path := strings.TrimPrefix(strings.TrimPrefix(c.DatabaseURL, "sqlite://"), "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if p, err := url.PathUnescape(path); err == nil && p != "" && p != ":memory:" {
		return filepath.Dir(p)
	}
	return c.DataDir
}

// EnsureSecret validates PLATFORM_SECRET, or in development creates one in
// the data directory (mode 0600) on first use and reads it back afterwards.
// It is separate from loading so that commands which need no secret (map,
// version) never touch the disk.
func (c *Config) EnsureSecret() error {
	if c.Secret != "" {
		if len(c.Secret) < MinSecretLen {
			return settingErr("PLATFORM_SECRET", "must be at least %d bytes, got %d", MinSecretLen, len(c.Secret))
		}
		return nil
	}
	if c.IsProduction() {
		return settingErr("PLATFORM_SECRET", "is required in production (at least %d bytes)", MinSecretLen)
	}
	dir := c.SecretDir()
	path := filepath.Join(dir, "secret")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		c.Secret = strings.TrimSpace(string(b))
		if len(c.Secret) < MinSecretLen {
			return settingErr("PLATFORM_SECRET", "the generated secret in the data directory is too short; delete it to regenerate")
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return settingErr("PLATFORM_DATA_DIR", "cannot read the generated secret: %v", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return settingErr("PLATFORM_DATA_DIR", "cannot create %s: %v", dir, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("generate secret: %w", err)
	}
	secret := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return c.EnsureSecret() // another process won the race; use its secret
	}
	if err != nil {
		return settingErr("PLATFORM_DATA_DIR", "cannot write the generated secret: %v", err)
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write secret: %w", err)
	}
	c.Secret = secret
	return nil
}

// LogValue keeps secrets out of logs when a Config is logged whole.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("env", c.Env),
		slog.String("addr", c.Addr),
		slog.String("base_url", c.BaseURL),
		slog.String("database", c.DatabaseDialect()),
		slog.Bool("smtp", c.SMTPURL != ""),
		slog.Bool("testing_tools", c.TestingTools),
	)
}
