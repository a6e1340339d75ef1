package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// Setting describes one configuration value: its environment variable, its
// flag, its default and how it is parsed into a Config.
type Setting struct {
	Env     string
	Flag    string
	Default string
	Usage   string
	// Bool marks a switch, shown as a boolean flag.
	Bool bool
	set  func(c *Config, v string) error
}

// Settings lists every setting in the order --help shows them.
func Settings() []Setting { return settings }

var settings = []Setting{
	{Env: "PLATFORM_ENV", Flag: "env", Default: EnvDevelopment, Usage: "development or production",
		set: func(c *Config, v string) error { c.Env = v; return nil }},
	{Env: "PLATFORM_ADDR", Flag: "addr", Default: "127.0.0.1:8080", Usage: "listen address of the HTTP API",
		set: func(c *Config, v string) error { c.Addr = v; return nil }},
	{Env: "PLATFORM_BASE_URL", Flag: "base-url", Usage: "public URL of the service (default derived from the address)",
		set: func(c *Config, v string) error { c.BaseURL = v; return nil }},
	{Env: "PLATFORM_DATA_DIR", Flag: "data-dir", Default: "./data", Usage: "directory for the embedded database and the development secret",
		set: func(c *Config, v string) error { c.DataDir = v; return nil }},
	{Env: "PLATFORM_DATABASE_URL", Flag: "database-url", Usage: "postgres://, postgresql://, sqlite:// or file: URL (default the SQLite file platform.db in the data dir)",
		set: func(c *Config, v string) error { c.DatabaseURL = v; return nil }},
	{Env: "PLATFORM_SECRET", Flag: "secret", Usage: "signing secret, at least 32 bytes; required in production (prefer the environment variable)",
		set: func(c *Config, v string) error { c.Secret = v; return nil }},
	{Env: "PLATFORM_TRUSTED_ORIGINS", Flag: "trusted-origins", Usage: "comma-separated extra origins trusted for CSRF and callback URLs",
		set: func(c *Config, v string) error { c.TrustedOrigins = splitList(v); return nil }},
	{Env: "PLATFORM_TRUSTED_PROXIES", Flag: "trusted-proxies", Usage: "comma-separated CIDRs whose X-Forwarded-For is believed",
		set: setProxies},
	{Env: "PLATFORM_SMTP_URL", Flag: "smtp-url", Usage: "smtp://user:pass@host:587 (STARTTLS), smtps://host:465, or smtp://host:25?tls=none; required in production",
		set: func(c *Config, v string) error { c.SMTPURL = v; return nil }},
	{Env: "PLATFORM_MAIL_FROM", Flag: "mail-from", Default: "Platform <no-reply@localhost>", Usage: "sender address of outgoing mail",
		set: func(c *Config, v string) error { c.MailFrom = v; return nil }},
	{Env: "PLATFORM_LOG_FORMAT", Flag: "log-format", Default: "text", Usage: "text or json",
		set: func(c *Config, v string) error { c.LogFormat = v; return nil }},
	{Env: "PLATFORM_LOG_LEVEL", Flag: "log-level", Default: "info", Usage: "debug, info, warn or error",
		set: func(c *Config, v string) error { return c.LogLevel.UnmarshalText([]byte(v)) }},
	{Env: "PLATFORM_MIGRATE", Flag: "migrate", Bool: true, Default: "false", Usage: "apply pending migrations before serving on PostgreSQL",
		set: func(c *Config, v string) error { return parseBool(&c.Migrate, v) }},
	{Env: "PLATFORM_SHUTDOWN_TIMEOUT", Flag: "shutdown-timeout", Default: "15s", Usage: "how long a stopping server lets in-flight requests finish",
		set: func(c *Config, v string) error { return parseDuration(&c.ShutdownTimeout, v) }},
	{Env: "PLATFORM_REQUEST_TIMEOUT", Flag: "request-timeout", Default: "20s", Usage: "longest a request may wait (on the database, for a password-hashing slot) before it answers 503; keep it under the 30s write timeout",
		set: func(c *Config, v string) error { return parseDuration(&c.RequestTimeout, v) }},
	{Env: "PLATFORM_METRICS_ADDR", Flag: "metrics-addr", Usage: "listen address for Prometheus metrics (off when empty)",
		set: func(c *Config, v string) error { c.MetricsAddr = v; return nil }},
	{Env: "PLATFORM_TESTING_TOOLS", Flag: "testing-tools", Bool: true, Usage: "serve testing metadata (default on in development, off in production)",
		set: func(c *Config, v string) error { return parseBool(&c.TestingTools, v) }},
	{Env: "PLATFORM_PLAYER_COOKIE_PREFIX", Flag: "player-cookie-prefix", Default: "better-auth", Usage: "cookie name prefix of player sessions",
		set: func(c *Config, v string) error { c.PlayerCookiePrefix = v; return nil }},
	{Env: "PLATFORM_ADMIN_COOKIE_PREFIX", Flag: "admin-cookie-prefix", Default: "platform-admin", Usage: "cookie name prefix of administrator sessions",
		set: func(c *Config, v string) error { c.AdminCookiePrefix = v; return nil }},
	{Env: "PLATFORM_SESSION_TTL", Flag: "session-ttl", Default: "168h", Usage: "lifetime of a remembered session",
		set: func(c *Config, v string) error { return parseDuration(&c.SessionTTL, v) }},
	{Env: "PLATFORM_SESSION_REFRESH_AFTER", Flag: "session-refresh-after", Default: "24h", Usage: "age after which an active session's expiry slides forward",
		set: func(c *Config, v string) error { return parseDuration(&c.SessionRefreshAfter, v) }},
	{Env: "PLATFORM_RATE_LIMIT_LOGIN_IP", Flag: "rate-limit-login-ip", Default: "30/1m", Usage: "sign-in and sign-up attempts per client IP (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitLoginIP, v) }},
	{Env: "PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", Flag: "rate-limit-login-account", Default: "10/15m", Usage: "sign-in and sign-up attempts per email address (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitLoginAccount, v) }},
	{Env: "PLATFORM_RATE_LIMIT_MAIL_IP", Flag: "rate-limit-mail-ip", Default: "10/10m", Usage: "password-reset and verification mail requests per client IP (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitMailIP, v) }},
	{Env: "PLATFORM_RATE_LIMIT_MAIL_ACCOUNT", Flag: "rate-limit-mail-account", Default: "3/10m", Usage: "password-reset and verification mail requests per email address (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitMailAccount, v) }},
	{Env: "PLATFORM_ARGON2_MEMORY_KIB", Flag: "argon2-memory-kib", Default: "19456", Usage: "argon2id memory in KiB",
		set: func(c *Config, v string) error { return parseUint32(&c.Argon2MemoryKiB, v) }},
	{Env: "PLATFORM_ARGON2_ITERATIONS", Flag: "argon2-iterations", Default: "2", Usage: "argon2id iterations",
		set: func(c *Config, v string) error { return parseUint32(&c.Argon2Iterations, v) }},
	{Env: "PLATFORM_ARGON2_PARALLELISM", Flag: "argon2-parallelism", Default: "1", Usage: "argon2id lanes",
		set: func(c *Config, v string) error {
			var n uint32
			if err := parseUint32(&n, v); err != nil || n > 255 {
				return fmt.Errorf("must be 1-255")
			}
			c.Argon2Parallelism = uint8(n)
			return nil
		}},
	{Env: "PLATFORM_TOKEN_TTL", Flag: "token-ttl", Default: "1h", Usage: "lifetime of an emailed confirmation token",
		set: func(c *Config, v string) error { return parseDuration(&c.TokenTTL, v) }},
	{Env: "PLATFORM_MAIL_POLL_INTERVAL", Flag: "mail-poll-interval", Default: "2s", Usage: "how often the mail worker looks for due messages when idle",
		set: func(c *Config, v string) error { return parseDuration(&c.MailPollInterval, v) }},
	{Env: "PLATFORM_MAIL_RETRY_BASE", Flag: "mail-retry-base", Default: "10s", Usage: "first retry delay after a temporary mail delivery failure (doubles per retry, with jitter, up to 15m)",
		set: func(c *Config, v string) error { return parseDuration(&c.MailRetryBase, v) }},
	{Env: "PLATFORM_MAIL_LEASE", Flag: "mail-lease", Default: "2m", Usage: "how long a claimed message belongs to its worker; a process killed mid-delivery delays the message by at most this",
		set: func(c *Config, v string) error { return parseDuration(&c.MailLease, v) }},
	{Env: "PLATFORM_FRIEND_LIMIT", Flag: "friend-limit", Default: "200", Usage: "most friends a player may have",
		set: func(c *Config, v string) error { return parseInt(&c.FriendLimit, v) }},
	{Env: "PLATFORM_LOBBY_IDLE_TIMEOUT", Flag: "lobby-idle-timeout", Default: "30m", Usage: "a lobby nobody acted in for this long closes",
		set: func(c *Config, v string) error { return parseDuration(&c.LobbyIdleTimeout, v) }},
	{Env: "PLATFORM_PROFILE_RATE_LIMIT", Flag: "profile-rate-limit", Default: "5", Usage: "profile change requests per user, and confirmation mails per address, per hour (0: no limit)",
		set: func(c *Config, v string) error {
			var n uint32
			if err := parseUint32(&n, v); err != nil || n > 10000 {
				return fmt.Errorf("must be 0-10000")
			}
			c.ProfileRateLimit = int(n)
			return nil
		}},
	{Env: "PLATFORM_MAP_SEED_SHORT", Flag: "map-seed-short", Default: "20261121", Usage: "seed of the short map the matchmaking queues serve",
		set: func(c *Config, v string) error { return parseUint64(&c.MapSeedShort, v) }},
	{Env: "PLATFORM_MAP_SEED_LONG", Flag: "map-seed-long", Default: "20261122", Usage: "seed of the long map the matchmaking queues serve",
		set: func(c *Config, v string) error { return parseUint64(&c.MapSeedLong, v) }},
	{Env: "PLATFORM_LIVEOPS_REFRESH", Flag: "liveops-refresh", Default: "1s", Usage: "how soon a server plays map seeds another process published (0: check on every request)",
		set: func(c *Config, v string) error { return parseDuration(&c.LiveOpsRefresh, v) }},
	{Env: "PLATFORM_EVENTS_HEARTBEAT", Flag: "events-heartbeat", Default: "15s", Usage: "interval of heartbeat comments on player event streams",
		set: func(c *Config, v string) error { return parseDuration(&c.EventsHeartbeat, v) }},
	{Env: "PLATFORM_EVENTS_WRITE_TIMEOUT", Flag: "events-write-timeout", Default: "10s", Usage: "an event stream whose client takes longer than this to accept a write is closed",
		set: func(c *Config, v string) error { return parseDuration(&c.EventsWriteTimeout, v) }},
	{Env: "PLATFORM_EVENTS_RETRY", Flag: "events-retry", Default: "2s", Usage: "reconnect delay suggested to event stream clients",
		set: func(c *Config, v string) error { return parseDuration(&c.EventsRetry, v) }},
	{Env: "PLATFORM_EVENTS_PER_SESSION", Flag: "events-per-session", Default: "3", Usage: "most event streams of one session; a newer one closes the oldest",
		set: func(c *Config, v string) error { return parseInt(&c.EventsPerSession, v) }},
	{Env: "PLATFORM_EVENTS_PER_PLAYER", Flag: "events-per-player", Default: "5", Usage: "most event streams of one player; a newer one closes the oldest",
		set: func(c *Config, v string) error { return parseInt(&c.EventsPerPlayer, v) }},
	{Env: "PLATFORM_EVENTS_MAX_STREAMS", Flag: "events-max-streams", Default: "20000", Usage: "most event streams of one serve process; past it new streams get 503",
		set: func(c *Config, v string) error { return parseInt(&c.EventsMaxStreams, v) }},
}

// Load builds a Config from defaults, then getenv, then flags (the values of
// flags the user set, keyed by flag name), and validates it.
func Load(getenv func(string) string, flags map[string]string) (*Config, error) {
	c := &Config{}
	explicit := make(map[string]bool)
	for _, s := range settings {
		v, from := s.Default, ""
		if ev := getenv(s.Env); ev != "" {
			v, from = ev, s.Env
		}
		if fv, ok := flags[s.Flag]; ok {
			v, from = fv, "--"+s.Flag
		}
		if from != "" {
			explicit[s.Env] = true
		}
		if v == "" {
			continue
		}
		if err := s.set(c, v); err != nil {
			shown := v
			if s.Env == "PLATFORM_SECRET" || s.Env == "PLATFORM_SMTP_URL" || s.Env == "PLATFORM_DATABASE_URL" {
				shown = "(redacted)"
			}
			return nil, settingErr(s.Env, "invalid value %s: %v", shown, err)
		}
	}
	if err := c.finish(explicit); err != nil {
		return nil, err
	}
	return c, nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func setProxies(c *Config, v string) error {
	c.TrustedProxies = nil
	for _, p := range splitList(v) {
		if !strings.Contains(p, "/") {
			addr, err := netip.ParseAddr(p)
			if err != nil {
				return fmt.Errorf("%q is not an IP or CIDR", p)
			}
			c.TrustedProxies = append(c.TrustedProxies, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("%q is not an IP or CIDR", p)
		}
		c.TrustedProxies = append(c.TrustedProxies, pfx.Masked())
	}
	return nil
}

func parseRule(dst *ratelimit.Rule, v string) error {
	r, err := ratelimit.ParseRule(v)
	if err != nil {
		return err
	}
	*dst = r
	return nil
}

func parseBool(dst *bool, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("must be true or false")
	}
	*dst = b
	return nil
}

func parseDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("must be a duration like 30s or 1h")
	}
	*dst = d
	return nil
}

func parseInt(dst *int, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("must be an integer")
	}
	*dst = n
	return nil
}

func parseUint64(dst *uint64, v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("must be an integer from 0 to 18446744073709551615")
	}
	*dst = n
	return nil
}

func parseUint32(dst *uint32, v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("must be a non-negative integer")
	}
	*dst = uint32(n)
	return nil
}
