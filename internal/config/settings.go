package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// Setting describes one configuration value: its environment variable, its
// flag, its default, which commands take it and how it is parsed into a
// Config.
type Setting struct {
	Env     string
	Flag    string
	Default string
	Usage   string
	// Group says which commands take the setting; an entry without one is
	// a server setting.
	Group Group
	// Type names the value's type in --help and the reference (string
	// when empty): duration, int, uint, uint64, list, rate.
	Type string
	// Bool marks a switch, shown as a boolean flag.
	Bool bool
	set  func(c *Config, v string) error
}

// Group is a set of settings that commands take together.
type Group int

// Setting groups. Every command that opens the database takes
// GroupDatabase; the support commands also take GroupServices (what their
// services need to sign, hash and write mail); only serve takes GroupServer.
const (
	GroupServer Group = iota
	GroupDatabase
	GroupServices
)

// GroupsAll are the groups of serve: every setting.
var GroupsAll = []Group{GroupDatabase, GroupServices, GroupServer}

// String names the group in the reference.
func (g Group) String() string {
	switch g {
	case GroupDatabase:
		return "database"
	case GroupServices:
		return "services"
	}
	return "server"
}

// TypeName is the setting's type as --help shows it.
func (s Setting) TypeName() string {
	switch {
	case s.Bool:
		return "bool"
	case s.Type == "":
		return "string"
	}
	return s.Type
}

// Parse checks v as a value of the setting, as a typed flag does.
func (s Setting) Parse(v string) error { return s.set(&Config{}, v) }

// In reports whether the setting belongs to one of groups.
func (s Setting) In(groups []Group) bool { return slices.Contains(groups, s.Group) }

// Settings lists every setting in the order --help shows them.
func Settings() []Setting { return settings }

// settings is the registry: one entry per setting. An entry without a
// Group is a server setting (serve only); give Type for anything but a
// string or a Bool switch, so that --help and docs/configuration.md name
// it. After adding one, regenerate the reference with
// `go test ./internal/config -run TestConfigurationReference -update`.

var settings = []Setting{
	{Env: "PLATFORM_ENV", Flag: "env", Group: GroupDatabase, Default: EnvDevelopment, Usage: "development or production",
		set: func(c *Config, v string) error { c.Env = v; return nil }},
	{Env: "PLATFORM_ADDR", Flag: "addr", Group: GroupServices, Default: "127.0.0.1:8080", Usage: "listen address of the HTTP API",
		set: func(c *Config, v string) error { c.Addr = v; return nil }},
	{Env: "PLATFORM_BASE_URL", Flag: "base-url", Group: GroupServices, Usage: "public URL of the service (default derived from the address)",
		set: func(c *Config, v string) error { c.BaseURL = v; return nil }},
	{Env: "PLATFORM_DATA_DIR", Flag: "data-dir", Group: GroupDatabase, Default: "./data", Usage: "directory for the embedded database and the development secret",
		set: func(c *Config, v string) error { c.DataDir = v; return nil }},
	{Env: "PLATFORM_DATABASE_URL", Flag: "database-url", Group: GroupDatabase, Usage: "postgres://, postgresql://, sqlite:// or file: URL (default the SQLite file platform.db in the data dir)",
		set: func(c *Config, v string) error { c.DatabaseURL = v; return nil }},
	{Env: "PLATFORM_SECRET", Flag: "secret", Group: GroupServices, Usage: "signing secret, at least 32 bytes; required in production (prefer the environment variable)",
		set: func(c *Config, v string) error { c.Secret = v; return nil }},
	{Env: "PLATFORM_TRUSTED_ORIGINS", Flag: "trusted-origins", Group: GroupServices, Type: "list", Usage: "comma-separated extra origins trusted for CSRF and callback URLs",
		set: func(c *Config, v string) error { c.TrustedOrigins = splitList(v); return nil }},
	{Env: "PLATFORM_TRUSTED_PROXIES", Flag: "trusted-proxies", Group: GroupServer, Type: "list", Usage: "comma-separated CIDRs whose X-Forwarded-For is believed",
		set: setProxies},
	{Env: "PLATFORM_SMTP_URL", Flag: "smtp-url", Group: GroupServices, Usage: "smtp://user:pass@host:587 (STARTTLS), smtps://host:465, or smtp://host:25?tls=none; required in production",
		set: func(c *Config, v string) error { c.SMTPURL = v; return nil }},
	{Env: "PLATFORM_MAIL_FROM", Flag: "mail-from", Group: GroupServices, Default: "Platform <no-reply@localhost>", Usage: "sender address of outgoing mail",
		set: func(c *Config, v string) error { c.MailFrom = v; return nil }},
	{Env: "PLATFORM_LOG_FORMAT", Flag: "log-format", Group: GroupDatabase, Default: "text", Usage: "text or json",
		set: func(c *Config, v string) error { c.LogFormat = v; return nil }},
	{Env: "PLATFORM_LOG_LEVEL", Flag: "log-level", Group: GroupDatabase, Default: "info", Usage: "debug, info, warn or error",
		set: func(c *Config, v string) error { return c.LogLevel.UnmarshalText([]byte(v)) }},
	{Env: "PLATFORM_MIGRATE", Flag: "migrate", Group: GroupServer, Bool: true, Default: "false", Usage: "apply pending migrations before serving on PostgreSQL",
		set: func(c *Config, v string) error { return parseBool(&c.Migrate, v) }},
	{Env: "PLATFORM_SHUTDOWN_TIMEOUT", Flag: "shutdown-timeout", Group: GroupServer, Type: "duration", Default: "15s", Usage: "how long a stopping server lets in-flight requests finish",
		set: func(c *Config, v string) error { return parseDuration(&c.ShutdownTimeout, v) }},
	{Env: "PLATFORM_REQUEST_TIMEOUT", Flag: "request-timeout", Group: GroupServer, Type: "duration", Default: "20s", Usage: "longest a request may wait (on the database, for a password-hashing slot) before it answers 503; keep it under the 30s write timeout",
		set: func(c *Config, v string) error { return parseDuration(&c.RequestTimeout, v) }},
	{Env: "PLATFORM_METRICS_ADDR", Flag: "metrics-addr", Group: GroupServer, Usage: "listen address for Prometheus metrics (off when empty)",
		set: func(c *Config, v string) error { c.MetricsAddr = v; return nil }},
	{Env: "PLATFORM_TESTING_TOOLS", Flag: "testing-tools", Group: GroupServer, Bool: true, Usage: "serve testing metadata (default on in development, off in production)",
		set: func(c *Config, v string) error { return parseBool(&c.TestingTools, v) }},
	{Env: "PLATFORM_PLAYER_COOKIE_PREFIX", Flag: "player-cookie-prefix", Group: GroupServer, Default: "better-auth", Usage: "cookie name prefix of player sessions",
		set: func(c *Config, v string) error { c.PlayerCookiePrefix = v; return nil }},
	{Env: "PLATFORM_ADMIN_COOKIE_PREFIX", Flag: "admin-cookie-prefix", Group: GroupServer, Default: "platform-admin", Usage: "cookie name prefix of administrator sessions",
		set: func(c *Config, v string) error { c.AdminCookiePrefix = v; return nil }},
	{Env: "PLATFORM_SESSION_TTL", Flag: "session-ttl", Group: GroupServices, Type: "duration", Default: "168h", Usage: "lifetime of a remembered session",
		set: func(c *Config, v string) error { return parseDuration(&c.SessionTTL, v) }},
	{Env: "PLATFORM_SESSION_REFRESH_AFTER", Flag: "session-refresh-after", Group: GroupServer, Type: "duration", Default: "24h", Usage: "age after which an active session's expiry slides forward",
		set: func(c *Config, v string) error { return parseDuration(&c.SessionRefreshAfter, v) }},
	{Env: "PLATFORM_SESSION_CACHE_SIZE", Flag: "session-cache-size", Group: GroupServer, Type: "int", Default: "100000", Usage: "validated sessions each process keeps in memory, about 1 KiB each and 1.6 KiB once get-session has answered from one (0 reads every session from the database)",
		set: func(c *Config, v string) error { return parseInt(&c.SessionCacheSize, v) }},
	{Env: "PLATFORM_RATE_LIMIT_LOGIN_IP", Flag: "rate-limit-login-ip", Group: GroupServer, Type: "rate", Default: "30/1m", Usage: "sign-in and sign-up attempts per client IP (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitLoginIP, v) }},
	{Env: "PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", Flag: "rate-limit-login-account", Group: GroupServer, Type: "rate", Default: "10/15m", Usage: "sign-in and sign-up attempts per email address (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitLoginAccount, v) }},
	{Env: "PLATFORM_RATE_LIMIT_MAIL_IP", Flag: "rate-limit-mail-ip", Group: GroupServer, Type: "rate", Default: "10/10m", Usage: "password-reset and verification mail requests per client IP (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitMailIP, v) }},
	{Env: "PLATFORM_RATE_LIMIT_MAIL_ACCOUNT", Flag: "rate-limit-mail-account", Group: GroupServer, Type: "rate", Default: "3/10m", Usage: "password-reset and verification mail requests per email address (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.RateLimitMailAccount, v) }},
	{Env: "PLATFORM_ARGON2_MEMORY_KIB", Flag: "argon2-memory-kib", Group: GroupServices, Type: "uint", Default: "19456", Usage: "argon2id memory in KiB",
		set: func(c *Config, v string) error { return parseUint32(&c.Argon2MemoryKiB, v) }},
	{Env: "PLATFORM_ARGON2_ITERATIONS", Flag: "argon2-iterations", Group: GroupServices, Type: "uint", Default: "2", Usage: "argon2id iterations",
		set: func(c *Config, v string) error { return parseUint32(&c.Argon2Iterations, v) }},
	{Env: "PLATFORM_ARGON2_PARALLELISM", Flag: "argon2-parallelism", Group: GroupServices, Type: "uint", Default: "1", Usage: "argon2id lanes",
		set: func(c *Config, v string) error {
			var n uint32
			if err := parseUint32(&n, v); err != nil || n > 255 {
				return fmt.Errorf("must be 1-255")
			}
			c.Argon2Parallelism = uint8(n)
			return nil
		}},
	{Env: "PLATFORM_TOKEN_TTL", Flag: "token-ttl", Group: GroupServices, Type: "duration", Default: "1h", Usage: "lifetime of an emailed confirmation token",
		set: func(c *Config, v string) error { return parseDuration(&c.TokenTTL, v) }},
	{Env: "PLATFORM_DELETION_QUARANTINE", Flag: "deletion-quarantine", Group: GroupServices, Type: "duration", Default: "720h", Usage: "how long a deleted account's email and nickname stay reserved before anyone may register them again",
		set: func(c *Config, v string) error { return parseDuration(&c.DeletionQuarantine, v) }},
	{Env: "PLATFORM_MAIL_POLL_INTERVAL", Flag: "mail-poll-interval", Group: GroupServer, Type: "duration", Default: "2s", Usage: "how often the mail worker looks for due messages when idle",
		set: func(c *Config, v string) error { return parseDuration(&c.MailPollInterval, v) }},
	{Env: "PLATFORM_MAIL_RETRY_BASE", Flag: "mail-retry-base", Group: GroupServer, Type: "duration", Default: "10s", Usage: "first retry delay after a temporary mail delivery failure (doubles per retry, with jitter, up to 15m)",
		set: func(c *Config, v string) error { return parseDuration(&c.MailRetryBase, v) }},
	{Env: "PLATFORM_MAIL_LEASE", Flag: "mail-lease", Group: GroupServer, Type: "duration", Default: "2m", Usage: "how long a claimed message belongs to its worker; a process killed mid-delivery delays the message by at most this",
		set: func(c *Config, v string) error { return parseDuration(&c.MailLease, v) }},
	{Env: "PLATFORM_FRIEND_LIMIT", Flag: "friend-limit", Group: GroupServer, Type: "int", Default: "200", Usage: "most friends a player may have",
		set: func(c *Config, v string) error { return parseInt(&c.FriendLimit, v) }},
	{Env: "PLATFORM_LOBBY_IDLE_TIMEOUT", Flag: "lobby-idle-timeout", Group: GroupServer, Type: "duration", Default: "30m", Usage: "a lobby nobody acted in for this long closes",
		set: func(c *Config, v string) error { return parseDuration(&c.LobbyIdleTimeout, v) }},
	{Env: "PLATFORM_PROFILE_RATE_LIMIT", Flag: "profile-rate-limit", Group: GroupServer, Type: "uint", Default: "5", Usage: "profile change requests per user, and confirmation mails per address, in any hour; a spent budget comes back one an hour (0: no limit)",
		set: func(c *Config, v string) error {
			var n uint32
			if err := parseUint32(&n, v); err != nil || n > 10000 {
				return fmt.Errorf("must be 0-10000")
			}
			c.ProfileRateLimit = int(n)
			return nil
		}},
	{Env: "PLATFORM_MAP_SEED_SHORT", Flag: "map-seed-short", Group: GroupServer, Type: "uint64", Default: "20261121", Usage: "seed of the short map the matchmaking queues serve",
		set: func(c *Config, v string) error { return parseUint64(&c.MapSeedShort, v) }},
	{Env: "PLATFORM_MAP_SEED_LONG", Flag: "map-seed-long", Group: GroupServer, Type: "uint64", Default: "20261122", Usage: "seed of the long map the matchmaking queues serve",
		set: func(c *Config, v string) error { return parseUint64(&c.MapSeedLong, v) }},
	{Env: "PLATFORM_LIVEOPS_REFRESH", Flag: "liveops-refresh", Group: GroupServer, Type: "duration", Default: "1s", Usage: "how soon a server plays map seeds and serves a content catalog another process published (0: check on every request)",
		set: func(c *Config, v string) error { return parseDuration(&c.LiveOpsRefresh, v) }},
	{Env: "PLATFORM_EVENTS_HEARTBEAT", Flag: "events-heartbeat", Group: GroupServer, Type: "duration", Default: "15s", Usage: "interval of heartbeat comments on player event streams",
		set: func(c *Config, v string) error { return parseDuration(&c.EventsHeartbeat, v) }},
	{Env: "PLATFORM_EVENTS_WRITE_TIMEOUT", Flag: "events-write-timeout", Group: GroupServer, Type: "duration", Default: "10s", Usage: "an event stream whose client takes longer than this to accept a write is closed",
		set: func(c *Config, v string) error { return parseDuration(&c.EventsWriteTimeout, v) }},
	{Env: "PLATFORM_EVENTS_RETRY", Flag: "events-retry", Group: GroupServer, Type: "duration", Default: "2s", Usage: "reconnect delay suggested to event stream clients",
		set: func(c *Config, v string) error { return parseDuration(&c.EventsRetry, v) }},
	{Env: "PLATFORM_EVENTS_PER_SESSION", Flag: "events-per-session", Group: GroupServer, Type: "int", Default: "3", Usage: "most event streams of one session; a newer one closes the oldest",
		set: func(c *Config, v string) error { return parseInt(&c.EventsPerSession, v) }},
	{Env: "PLATFORM_EVENTS_PER_PLAYER", Flag: "events-per-player", Group: GroupServer, Type: "int", Default: "5", Usage: "most event streams of one player; a newer one closes the oldest",
		set: func(c *Config, v string) error { return parseInt(&c.EventsPerPlayer, v) }},
	{Env: "PLATFORM_EVENTS_MAX_STREAMS", Flag: "events-max-streams", Group: GroupServer, Type: "int", Default: "20000", Usage: "most event streams of one serve process; past it new streams get 503",
		set: func(c *Config, v string) error { return parseInt(&c.EventsMaxStreams, v) }},
	{Env: "PLATFORM_DB_MAX_CONNS", Flag: "db-max-conns", Group: GroupDatabase, Type: "int", Default: "20", Usage: "most PostgreSQL connections one process opens (1-1000); keep replicas × this below the server's max_connections",
		set: func(c *Config, v string) error { return parseIntIn(&c.DBPool.MaxConns, v, 1, 1000) }},
	{Env: "PLATFORM_DB_MAX_IDLE_CONNS", Flag: "db-max-idle-conns", Group: GroupDatabase, Type: "int", Default: "20", Usage: "idle PostgreSQL connections kept open (0 up to the maximum)",
		set: func(c *Config, v string) error { return parseIntIn(&c.DBPool.MaxIdleConns, v, 0, 1000) }},
	{Env: "PLATFORM_DB_CONN_MAX_LIFETIME", Flag: "db-conn-max-lifetime", Group: GroupDatabase, Type: "duration", Default: "1h", Usage: "a PostgreSQL connection is replaced after this long (0: never)",
		set: func(c *Config, v string) error { return parseDurationIn(&c.DBPool.ConnMaxLifetime, v, 0, 24*time.Hour) }},
	{Env: "PLATFORM_DB_CONN_MAX_IDLE_TIME", Flag: "db-conn-max-idle-time", Group: GroupDatabase, Type: "duration", Default: "5m", Usage: "an idle PostgreSQL connection is closed after this long (0: never)",
		set: func(c *Config, v string) error { return parseDurationIn(&c.DBPool.ConnMaxIdleTime, v, 0, 24*time.Hour) }},
	{Env: "PLATFORM_DB_STATEMENT_TIMEOUT", Flag: "db-statement-timeout", Group: GroupDatabase, Type: "duration", Default: "30s", Usage: "PostgreSQL cancels a statement that runs longer (0: no limit)",
		set: func(c *Config, v string) error { return parseDurationIn(&c.DBPool.StatementTimeout, v, 0, time.Hour) }},
	{Env: "PLATFORM_DB_CONNECT_WAIT", Flag: "db-connect-wait", Group: GroupDatabase, Type: "duration", Default: "5s", Usage: "how long opening a PostgreSQL connection keeps trying while no server of the URL accepts it, as during a failover or switchover (0-1m; 0: once); keep it under PLATFORM_REQUEST_TIMEOUT",
		set: func(c *Config, v string) error { return parseDurationIn(&c.DBPool.ConnectWait, v, 0, time.Minute) }},
	{Env: "PLATFORM_GAUGES_REFRESH", Flag: "gauges-refresh", Group: GroupServer, Type: "duration", Default: "1m", Usage: "how often the counter job measures the figures of the metrics and admin bootstraps (5s-1h)",
		set: func(c *Config, v string) error { return parseDurationIn(&c.GaugesRefresh, v, 5*time.Second, time.Hour) }},
	{Env: "PLATFORM_SWEEP_INTERVAL", Flag: "sweep-interval", Group: GroupServer, Type: "duration", Default: "1h", Usage: "period of the sweeps of expired sessions, tokens, rate-limit counters and old rows (100ms-24h)",
		set: func(c *Config, v string) error { return parsePeriod(&c.Jobs.SweepEvery, v) }},
	{Env: "PLATFORM_LOBBY_SWEEP_INTERVAL", Flag: "lobby-sweep-interval", Group: GroupServer, Type: "duration", Default: "1m", Usage: "period of closing idle lobbies (100ms-24h)",
		set: func(c *Config, v string) error { return parsePeriod(&c.Jobs.LobbyEvery, v) }},
	{Env: "PLATFORM_MAIL_SWEEP_INTERVAL", Flag: "mail-sweep-interval", Group: GroupServer, Type: "duration", Default: "5s", Usage: "period of giving up on mail whose link expired (100ms-24h)",
		set: func(c *Config, v string) error { return parsePeriod(&c.Jobs.MailEvery, v) }},
	{Env: "PLATFORM_MAIL_RETENTION", Flag: "mail-retention", Group: GroupServices, Type: "duration", Default: "720h", Usage: "how long sent, failed and expired mail is kept (at least 1h)",
		set: func(c *Config, v string) error { return parseRetention(&c.Jobs.MailRetention, v, false) }},
	{Env: "PLATFORM_AUDIT_RETENTION", Flag: "audit-retention", Group: GroupServices, Type: "duration", Default: "0", Usage: "how long audit entries are kept (0: for ever; else at least 24h)",
		set: func(c *Config, v string) error { return parseRetention(&c.Jobs.AuditRetention, v, true) }},
	{Env: "PLATFORM_HASH_WAIT", Flag: "hash-wait", Group: GroupServices, Type: "duration", Default: "2s", Usage: "longest wait for a password-hashing slot before a 503 (100ms-30s)",
		set: func(c *Config, v string) error {
			if err := parseDuration(&c.Jobs.HashWait, v); err != nil || c.Jobs.HashWait < 100*time.Millisecond || c.Jobs.HashWait > 30*time.Second {
				return fmt.Errorf("must be a duration from 100ms to 30s")
			}
			return nil
		}},
	{Env: "PLATFORM_HASH_PER_CLIENT", Flag: "hash-per-client", Group: GroupServices, Type: "int", Default: "2", Usage: "password hashes one client address or account may have in flight (1-16)",
		set: func(c *Config, v string) error {
			if err := parseInt(&c.Jobs.HashPerClient, v); err != nil || c.Jobs.HashPerClient < 1 || c.Jobs.HashPerClient > 16 {
				return fmt.Errorf("must be an integer from 1 to 16")
			}
			return nil
		}},
	{Env: "PLATFORM_JOB_LEASE", Flag: "job-lease", Group: GroupServer, Type: "duration", Default: "1m", Usage: "how long a replica holds a background job without renewing its claim; a killed replica's job is taken over after it (1s-1h)",
		set: func(c *Config, v string) error { return parseDurationIn(&c.Jobs.Lease, v, time.Second, time.Hour) }},
	{Env: "PLATFORM_SWEEP_BATCH", Flag: "sweep-batch", Group: GroupServer, Type: "int", Default: "10000", Usage: "most rows one sweep statement deletes, each batch its own transaction (100-10000)",
		set: func(c *Config, v string) error { return parseIntIn(&c.Jobs.SweepBatch, v, 100, 10000) }},
	{Env: "PLATFORM_AUTH_PROVIDERS_FILE", Flag: "auth-providers-file", Group: GroupServer, Usage: "YAML or JSON file of the identity providers players may sign in with (see docs/operations.md); secrets are named there, never written in it",
		set: func(c *Config, v string) error { c.Social.ProvidersFile = v; return nil }},
	{Env: "PLATFORM_AUTH_PROVIDER_TIMEOUT", Flag: "auth-provider-timeout", Group: GroupServer, Type: "duration", Default: "10s", Usage: "longest one request waits on an identity provider before the sign-in fails with unable_to_get_user_info (1s-60s)",
		set: func(c *Config, v string) error {
			return parseDurationIn(&c.Social.ProviderTimeout, v, time.Second, time.Minute)
		}},
	{Env: "PLATFORM_RATE_LIMIT_GUEST_IP", Flag: "rate-limit-guest-ip", Group: GroupServer, Type: "rate", Default: "30/1h", Usage: "guest accounts one client address may create (N/DURATION or off)",
		set: func(c *Config, v string) error { return parseRule(&c.Social.GuestIP, v) }},
	{Env: "PLATFORM_GUEST_RETENTION", Flag: "guest-retention", Group: GroupServer, Type: "duration", Default: "720h", Usage: "guests that own nothing and were inactive this long are removed (at least 1h)",
		set: func(c *Config, v string) error { return parseRetention(&c.Social.GuestRetention, v, false) }},
	{Env: "PLATFORM_PREVIOUS_SECRETS", Flag: "previous-secrets", Group: GroupServices, Type: "list", Usage: "comma-separated former values of PLATFORM_SECRET, newest first: values encrypted under them still decrypt until `platformctl secrets rotate` re-encrypts them",
		set: func(c *Config, v string) error { c.PreviousSecrets = splitList(v); return nil }},
	{Env: "PLATFORM_FRESH_AGE", Flag: "fresh-age", Group: GroupServices, Type: "duration", Default: "10m", Usage: "a session signed in this recently may change second factors and other sensitive settings, delete the account or export its data without entering the password again (1m-24h)",
		set: func(c *Config, v string) error { return parseDurationIn(&c.FreshAge, v, time.Minute, 24*time.Hour) }},
	{Env: "PLATFORM_PASSKEY_RP_ID", Flag: "passkey-rp-id", Group: GroupServices, Usage: "WebAuthn relying party id of passkeys (default the base URL's host name)",
		set: func(c *Config, v string) error { c.PasskeyRPID = v; return nil }},
	{Env: "PLATFORM_PASSKEY_ORIGINS", Flag: "passkey-origins", Group: GroupServices, Type: "list", Usage: "comma-separated origins passkey ceremonies may come from (default the base URL's origin)",
		set: func(c *Config, v string) error { c.PasskeyOrigins = splitList(v); return nil }},
}

// parseIntIn parses an integer from lo to hi.
func parseIntIn(dst *int, v string, lo, hi int) error {
	if err := parseInt(dst, v); err != nil || *dst < lo || *dst > hi {
		return fmt.Errorf("must be an integer from %d to %d", lo, hi)
	}
	return nil
}

// parsePeriod reads a job period.
func parsePeriod(dst *time.Duration, v string) error {
	if err := parseDuration(dst, v); err != nil || *dst < 100*time.Millisecond || *dst > 24*time.Hour {
		return fmt.Errorf("must be a duration from 100ms to 24h")
	}
	return nil
}

// parseDurationIn parses a duration from lo to hi.
func parseDurationIn(dst *time.Duration, v string, lo, hi time.Duration) error {
	if err := parseDuration(dst, v); err != nil || *dst < lo || *dst > hi {
		return fmt.Errorf("must be a duration from %s to %s", lo, hi)
	}
	return nil
}

// parseRetention reads a retention: at least an hour (a day for the audit
// log), or 0 for ever where forever is allowed.
func parseRetention(dst *time.Duration, v string, forever bool) error {
	least := time.Hour
	if forever {
		least = 24 * time.Hour
	}
	if err := parseDuration(dst, v); err != nil && !(forever && v == "0") {
		return err
	}
	if forever && *dst == 0 {
		return nil
	}
	if *dst < least {
		return fmt.Errorf("must be at least %s", least)
	}
	return nil
}

// Load builds a Config with every setting, as serve takes them.
func Load(getenv func(string) string, flags map[string]string) (*Config, error) {
	return LoadGroups(getenv, flags, GroupsAll)
}

// LoadGroups builds a Config from defaults, then getenv, then flags (the
// values of flags the user set, keyed by flag name). Only the settings of
// groups are read from the environment and flags, and only their problems
// are reported; the others keep their defaults. Every problem is reported
// at once, as Errors.
func LoadGroups(getenv func(string) string, flags map[string]string, groups []Group) (*Config, error) {
	c := &Config{sources: make(map[string]string)}
	c.Social.Getenv = getenv
	var errs Errors
	for _, s := range settings {
		v, from := s.Default, ""
		if s.In(groups) {
			if ev := getenv(s.Env); ev != "" {
				v, from = ev, s.Env
			}
			if fv, ok := flags[s.Flag]; ok {
				v, from = fv, "--"+s.Flag
			}
		}
		if from != "" {
			c.sources[s.Env] = from
		}
		if v == "" {
			continue
		}
		if err := s.set(c, v); err != nil {
			shown := v
			if s.Env == "PLATFORM_SECRET" || s.Env == "PLATFORM_SMTP_URL" || s.Env == "PLATFORM_DATABASE_URL" {
				shown = "(redacted)"
			}
			errs = append(errs, &Error{Setting: s.Env, Problem: fmt.Sprintf("invalid value %s: %v", shown, err)})
		}
	}
	for _, e := range c.finish() {
		if settingIn(e.Setting, groups) && !errs.has(e.Setting) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

func settingIn(env string, groups []Group) bool {
	for _, s := range settings {
		if s.Env == env {
			return s.In(groups)
		}
	}
	return true
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

// UnknownVariables returns a warning for each PLATFORM_* variable in
// environ (KEY=VALUE pairs) that getenv also sees but that names no
// setting, suggesting the closest setting's name.
func UnknownVariables(environ []string, getenv func(string) string) []string {
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PLATFORM_") || getenv(name) == "" || isSetting(name) || slices.Contains(notSettings, name) {
			continue
		}
		w := name + " is not a setting and is ignored"
		if best := closestSetting(name); best != "" {
			w += " (did you mean " + best + "?)"
		}
		warnings = append(warnings, w)
	}
	return warnings
}

// notSettings are PLATFORM_* variables that other tools read.
var notSettings = []string{"PLATFORM_TEST_DATABASE_URL"}

func isSetting(env string) bool {
	return slices.ContainsFunc(settings, func(s Setting) bool { return s.Env == env })
}

// closestSetting is the setting name within a few edits of name, if any.
func closestSetting(name string) string {
	best, bestDist := "", 4
	for _, s := range settings {
		if d := editDistance(name, s.Env); d < bestDist {
			best, bestDist = s.Env, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
