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
	// live-ops version it last read before asking the database whether
	// another process published a newer one (0: ask on every request).
	LiveOpsRefresh time.Duration
}

// Error is a configuration problem: which setting, and what is wrong.
type Error struct {
	Setting string // environment variable name
	Problem string
}

func (e *Error) Error() string { return e.Setting + ": " + e.Problem }

func settingErr(setting, format string, args ...any) error {
	return &Error{Setting: setting, Problem: fmt.Sprintf(format, args...)}
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
func (c *Config) finish(explicit map[string]bool) error {
	if c.Env != EnvDevelopment && c.Env != EnvProduction {
		return settingErr("PLATFORM_ENV", "must be development or production, got %q", c.Env)
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return settingErr("PLATFORM_ADDR", "must be host:port, got %q", c.Addr)
	}
	if c.BaseURL == "" {
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		c.BaseURL = "http://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return settingErr("PLATFORM_BASE_URL", "must be an absolute http(s) URL, got %q", c.BaseURL)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.DataDir == "" {
		return settingErr("PLATFORM_DATA_DIR", "must not be empty")
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = "file:" + filepath.Join(c.DataDir, "platform.db")
	}
	switch {
	case isPostgresURL(c.DatabaseURL):
		if _, err := url.Parse(c.DatabaseURL); err != nil {
			return settingErr("PLATFORM_DATABASE_URL", "not a valid URL")
		}
	case strings.HasPrefix(c.DatabaseURL, "sqlite://"), strings.HasPrefix(c.DatabaseURL, "file:"):
	default:
		return settingErr("PLATFORM_DATABASE_URL", "must start with postgres://, postgresql://, sqlite:// or file:")
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
			return settingErr("PLATFORM_TRUSTED_ORIGINS", "%q is not an origin like https://play.example.com", o)
		}
		origins = append(origins, ou.Scheme+"://"+ou.Host)
	}
	c.TrustedOrigins = origins
	if c.SMTPURL != "" {
		su, err := url.Parse(c.SMTPURL)
		if err != nil || (su.Scheme != "smtp" && su.Scheme != "smtps") || su.Host == "" {
			return settingErr("PLATFORM_SMTP_URL", "must be smtp://host:port or smtps://host:port")
		}
	} else if c.IsProduction() {
		return settingErr("PLATFORM_SMTP_URL", "is required in production")
	}
	if c.MailFrom == "" {
		return settingErr("PLATFORM_MAIL_FROM", "must not be empty")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return settingErr("PLATFORM_LOG_FORMAT", "must be text or json, got %q", c.LogFormat)
	}
	if c.ShutdownTimeout <= 0 {
		return settingErr("PLATFORM_SHUTDOWN_TIMEOUT", "must be positive")
	}
	if c.RequestTimeout < 100*time.Millisecond {
		return settingErr("PLATFORM_REQUEST_TIMEOUT", "must be at least 100ms")
	}
	if c.SessionTTL < time.Hour {
		return settingErr("PLATFORM_SESSION_TTL", "must be at least 1h")
	}
	if c.SessionRefreshAfter <= 0 || c.SessionRefreshAfter >= c.SessionTTL {
		return settingErr("PLATFORM_SESSION_REFRESH_AFTER", "must be positive and shorter than the session TTL")
	}
	if c.FriendLimit < 1 || c.FriendLimit > 10000 {
		return settingErr("PLATFORM_FRIEND_LIMIT", "must be 1-10000")
	}
	if c.LobbyIdleTimeout < time.Minute {
		return settingErr("PLATFORM_LOBBY_IDLE_TIMEOUT", "must be at least 1m")
	}
	if c.TokenTTL < time.Minute {
		return settingErr("PLATFORM_TOKEN_TTL", "must be at least 1m")
	}
	if c.LiveOpsRefresh < 0 || c.LiveOpsRefresh > time.Minute {
		return settingErr("PLATFORM_LIVEOPS_REFRESH", "must be between 0s and 1m")
	}
	if err := c.validateEvents(); err != nil {
		return err
	}
	if c.MailPollInterval < 10*time.Millisecond || c.MailPollInterval > time.Minute {
		return settingErr("PLATFORM_MAIL_POLL_INTERVAL", "must be between 10ms and 1m")
	}
	if c.MailRetryBase < 10*time.Millisecond || c.MailRetryBase > 15*time.Minute {
		return settingErr("PLATFORM_MAIL_RETRY_BASE", "must be between 10ms and 15m")
	}
	if c.MailLease < 2*time.Second || c.MailLease > time.Hour {
		return settingErr("PLATFORM_MAIL_LEASE", "must be between 2s and 1h")
	}
	if c.ProfileRateLimit < 0 || c.ProfileRateLimit > 10000 {
		return settingErr("PLATFORM_PROFILE_RATE_LIMIT", "must be between 0 (off) and 10000")
	}
	if c.PlayerCookiePrefix == "" || c.AdminCookiePrefix == "" || c.PlayerCookiePrefix == c.AdminCookiePrefix {
		return settingErr("PLATFORM_ADMIN_COOKIE_PREFIX", "player and admin cookie prefixes must be set and differ")
	}
	// OWASP: argon2id with at least 19 MiB, 2 iterations, 1 degree of parallelism.
	if c.Argon2MemoryKiB < 19*1024 {
		return settingErr("PLATFORM_ARGON2_MEMORY_KIB", "must be at least 19456 (OWASP minimum)")
	}
	if c.Argon2Iterations < 2 {
		return settingErr("PLATFORM_ARGON2_ITERATIONS", "must be at least 2 (OWASP minimum)")
	}
	if c.Argon2Parallelism < 1 {
		return settingErr("PLATFORM_ARGON2_PARALLELISM", "must be at least 1")
	}
	if !explicit["PLATFORM_TESTING_TOOLS"] {
		c.TestingTools = !c.IsProduction()
	}
	return nil
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
	path := filepath.Join(c.DataDir, "secret")
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
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return settingErr("PLATFORM_DATA_DIR", "cannot create %s: %v", c.DataDir, err)
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

// validateEvents checks the event stream settings.
func (c *Config) validateEvents() error {
	switch {
	case c.EventsHeartbeat < 10*time.Millisecond || c.EventsHeartbeat > 5*time.Minute:
		return settingErr("PLATFORM_EVENTS_HEARTBEAT", "must be between 10ms and 5m")
	case c.EventsWriteTimeout < 10*time.Millisecond || c.EventsWriteTimeout > time.Minute:
		return settingErr("PLATFORM_EVENTS_WRITE_TIMEOUT", "must be between 10ms and 1m")
	case c.EventsRetry < 100*time.Millisecond || c.EventsRetry > 5*time.Minute:
		return settingErr("PLATFORM_EVENTS_RETRY", "must be between 100ms and 5m")
	case c.EventsPerSession < 1 || c.EventsPerSession > 100:
		return settingErr("PLATFORM_EVENTS_PER_SESSION", "must be 1-100")
	case c.EventsPerPlayer < c.EventsPerSession || c.EventsPerPlayer > 1000:
		return settingErr("PLATFORM_EVENTS_PER_PLAYER", "must be from the per-session cap to 1000")
	case c.EventsMaxStreams < 1 || c.EventsMaxStreams > 1_000_000:
		return settingErr("PLATFORM_EVENTS_MAX_STREAMS", "must be 1-1000000")
	}
	return nil
}
