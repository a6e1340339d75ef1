package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, env map[string]string, flags map[string]string) (*Config, error) {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["PLATFORM_DATA_DIR"]; !ok {
		env["PLATFORM_DATA_DIR"] = t.TempDir()
	}
	return Load(func(k string) string { return env[k] }, flags)
}

func TestDefaults(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Env != EnvDevelopment || c.Addr != "127.0.0.1:8080" || c.BaseURL != "http://127.0.0.1:8080" {
		t.Fatalf("defaults: env %q addr %q base %q", c.Env, c.Addr, c.BaseURL)
	}
	if c.DatabaseDialect() != "sqlite" || !strings.HasSuffix(c.DatabaseURL, "platform.db") {
		t.Fatalf("default database %q", c.DatabaseURL)
	}
	if len(c.TrustedOrigins) != 1 || c.TrustedOrigins[0] != "http://127.0.0.1:8080" {
		t.Fatalf("trusted origins %v, want the base URL's origin", c.TrustedOrigins)
	}
	if !c.TestingTools || c.SessionTTL != 168*time.Hour || c.TokenTTL != time.Hour {
		t.Fatalf("defaults: testing %v session %v token %v", c.TestingTools, c.SessionTTL, c.TokenTTL)
	}
}

func TestPrecedenceDefaultsEnvFlags(t *testing.T) {
	env := map[string]string{"PLATFORM_ADDR": "127.0.0.1:9000", "PLATFORM_LOG_FORMAT": "json"}
	c, err := load(t, env, map[string]string{"addr": "127.0.0.1:9100"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9100" {
		t.Fatalf("flag did not win: %q", c.Addr)
	}
	if c.LogFormat != "json" {
		t.Fatalf("environment did not beat the default: %q", c.LogFormat)
	}
	if c.BaseURL != "http://127.0.0.1:9100" {
		t.Fatalf("base URL %q not derived from the address", c.BaseURL)
	}
}

func TestWildcardAddressDerivesLocalhost(t *testing.T) {
	c, err := load(t, map[string]string{"PLATFORM_ADDR": "0.0.0.0:8080"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "http://localhost:8080" {
		t.Fatalf("base URL %q", c.BaseURL)
	}
}

func TestInvalidSettingsNameTheSetting(t *testing.T) {
	cases := []struct {
		env     map[string]string
		setting string
	}{
		{map[string]string{"PLATFORM_ENV": "staging"}, "PLATFORM_ENV"},
		{map[string]string{"PLATFORM_ADDR": "8080"}, "PLATFORM_ADDR"},
		{map[string]string{"PLATFORM_BASE_URL": "ftp://x"}, "PLATFORM_BASE_URL"},
		{map[string]string{"PLATFORM_DATABASE_URL": "mysql://x"}, "PLATFORM_DATABASE_URL"},
		{map[string]string{"PLATFORM_TRUSTED_ORIGINS": "https://ok.example, not-an-origin"}, "PLATFORM_TRUSTED_ORIGINS"},
		{map[string]string{"PLATFORM_TRUSTED_PROXIES": "10.0.0.0/8,nonsense"}, "PLATFORM_TRUSTED_PROXIES"},
		{map[string]string{"PLATFORM_SMTP_URL": "http://mail"}, "PLATFORM_SMTP_URL"},
		{map[string]string{"PLATFORM_LOG_FORMAT": "xml"}, "PLATFORM_LOG_FORMAT"},
		{map[string]string{"PLATFORM_LOG_LEVEL": "loud"}, "PLATFORM_LOG_LEVEL"},
		{map[string]string{"PLATFORM_SHUTDOWN_TIMEOUT": "soon"}, "PLATFORM_SHUTDOWN_TIMEOUT"},
		{map[string]string{"PLATFORM_ARGON2_MEMORY_KIB": "1024"}, "PLATFORM_ARGON2_MEMORY_KIB"},
		{map[string]string{"PLATFORM_ENV": "production", "PLATFORM_SECRET": strings.Repeat("s", 40)}, "PLATFORM_SMTP_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.setting, func(t *testing.T) {
			_, err := load(t, tc.env, nil)
			var ce *Error
			if !errors.As(err, &ce) || ce.Setting != tc.setting {
				t.Fatalf("env %v: error %v, want one naming %s", tc.env, err, tc.setting)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestSecretsAreNotEchoed(t *testing.T) {
	_, err := load(t, map[string]string{"PLATFORM_DATABASE_URL": "postgres://u:hunter2@db/x", "PLATFORM_SMTP_URL": "smtp://u:hunter2@%zz"}, nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v leaks a password", err)
	}
}

func TestSecretRequiredInProductionAndGeneratedInDevelopment(t *testing.T) {
	prod, err := load(t, map[string]string{"PLATFORM_ENV": "production", "PLATFORM_SMTP_URL": "smtp://mail:25"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prod.TestingTools {
		t.Fatal("testing tools on by default in production")
	}
	var ce *Error
	if err := prod.EnsureSecret(); !errors.As(err, &ce) || ce.Setting != "PLATFORM_SECRET" {
		t.Fatalf("production without secret: %v", err)
	}
	short, _ := load(t, map[string]string{"PLATFORM_SECRET": "too-short"}, nil)
	if err := short.EnsureSecret(); !errors.As(err, &ce) || ce.Setting != "PLATFORM_SECRET" {
		t.Fatalf("short secret: %v", err)
	}

	dir := t.TempDir()
	dev, _ := load(t, map[string]string{"PLATFORM_DATA_DIR": dir}, nil)
	if err := dev.EnsureSecret(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "secret"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated secret file: %v mode %v", err, fi.Mode())
	}
	again, _ := load(t, map[string]string{"PLATFORM_DATA_DIR": dir}, nil)
	if err := again.EnsureSecret(); err != nil || again.Secret != dev.Secret || len(dev.Secret) < MinSecretLen {
		t.Fatalf("secret not kept across runs: %v", err)
	}
}

func TestMapSeeds(t *testing.T) {
	env := map[string]string{"PLATFORM_DATA_DIR": t.TempDir()}
	c, err := Load(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.MapSeedShort != 20261121 || c.MapSeedLong != 20261122 {
		t.Errorf("default seeds %d/%d", c.MapSeedShort, c.MapSeedLong)
	}
	env["PLATFORM_MAP_SEED_LONG"] = "18446744073709551615"
	c, err = Load(func(k string) string { return env[k] }, map[string]string{"map-seed-short": "0"})
	if err != nil || c.MapSeedShort != 0 || c.MapSeedLong != 18446744073709551615 {
		t.Fatalf("seeds %d/%d, %v", c.MapSeedShort, c.MapSeedLong, err)
	}
	env["PLATFORM_MAP_SEED_SHORT"] = "-1"
	var ce *Error
	if _, err := Load(func(k string) string { return env[k] }, nil); !errors.As(err, &ce) || ce.Setting != "PLATFORM_MAP_SEED_SHORT" {
		t.Fatalf("negative seed: %v", err)
	}
}

func TestEveryProblemReportedAtOnce(t *testing.T) {
	_, err := load(t, map[string]string{"PLATFORM_ENV": "staging", "PLATFORM_FRIEND_LIMIT": "many", "PLATFORM_LOG_FORMAT": "xml"}, nil)
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("three bad settings: %v, want three problems", err)
	}
	for i, want := range []string{"PLATFORM_FRIEND_LIMIT", "PLATFORM_ENV", "PLATFORM_LOG_FORMAT"} {
		if !errs.has(want) {
			t.Errorf("problem %d: %s not reported in %v", i, want, errs)
		}
	}
}

func TestGroupsReadOnlyTheirSettings(t *testing.T) {
	env := map[string]string{"PLATFORM_ENV": "production", "PLATFORM_RATE_LIMIT_LOGIN_IP": "lots",
		"PLATFORM_FRIEND_LIMIT": "7", "PLATFORM_DATA_DIR": t.TempDir()}
	c, err := LoadGroups(func(k string) string { return env[k] }, nil, []Group{GroupDatabase})
	if err != nil {
		t.Fatalf("database settings of a production job with a bad server setting: %v", err)
	}
	if c.FriendLimit != 200 {
		t.Fatalf("a server setting was read by a database-only command: friend limit %d", c.FriendLimit)
	}
	if _, err := LoadGroups(func(k string) string { return env[k] }, nil, GroupsAll); err == nil {
		t.Fatal("serve's settings accepted a bad rate limit and a missing SMTP URL in production")
	}
}

func TestUnknownVariablesAreNamed(t *testing.T) {
	environ := []string{"PLATFORM_DATABSE_URL=x", "PLATFORM_ENV=development", "PLATFORM_TEST_DATABASE_URL=y", "HOME=/root"}
	getenv := func(k string) string {
		for _, kv := range environ {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}
	w := UnknownVariables(environ, getenv)
	if len(w) != 1 || !strings.Contains(w[0], "did you mean PLATFORM_DATABASE_URL") {
		t.Fatalf("warnings %q, want one for the misspelt database URL", w)
	}
}

// A development secret lives next to the SQLite database, so a CLI run
// from any directory that names the same database finds serve's secret.
func TestSecretLivesNextToTheDatabase(t *testing.T) {
	dbDir := t.TempDir()
	env := map[string]string{"PLATFORM_DATABASE_URL": "file:" + filepath.Join(dbDir, "platform.db")}
	c, err := LoadGroups(func(k string) string { return env[k] }, nil, GroupsAll)
	if err != nil {
		t.Fatal(err)
	}
	if c.SecretDir() != dbDir {
		t.Fatalf("secret dir %q, want the database's directory %q", c.SecretDir(), dbDir)
	}
	if err := c.EnsureSecret(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dbDir, "secret")); err != nil {
		t.Fatalf("secret not written next to the database: %v", err)
	}
}
