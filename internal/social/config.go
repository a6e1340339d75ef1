// Package social talks to identity providers: generic OpenID Connect
// through discovery, generic OAuth2 with explicit endpoints and a userinfo
// mapping, and presets for Google, Apple and Discord. It builds
// authorization URLs (PKCE S256 always, a nonce for OpenID providers),
// exchanges codes, verifies ID tokens through the provider's JWKS and
// returns who the provider says the user is. Sessions, accounts and the
// linking rules belong to package auth.
package social

import (
	"crypto/subtle"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Provider kinds.
const (
	KindOIDC    = "oidc"
	KindOAuth2  = "oauth2"
	KindGoogle  = "google"
	KindApple   = "apple"
	KindDiscord = "discord"
)

// File is the providers file (YAML or JSON) named by
// PLATFORM_AUTH_PROVIDERS_FILE.
type File struct {
	Providers []ProviderConfig `json:"providers"`
}

// ProviderConfig is one provider of the file. Secrets never sit in it:
// ClientSecretEnv names an environment variable and ClientSecretFile a
// file that holds the client secret (Apple: PrivateKeyEnv or
// PrivateKeyFile hold the .p8 signing key instead).
type ProviderConfig struct {
	// ID names the provider in /sign-in/social and /callback/{id}.
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// ClientID is also the audience ID tokens must carry; Audiences adds
	// more (a native app's client id next to the web one).
	ClientID         string   `json:"clientId"`
	Audiences        []string `json:"audiences"`
	ClientSecretEnv  string   `json:"clientSecretEnv"`
	ClientSecretFile string   `json:"clientSecretFile"`
	// Issuer is discovered from (oidc, google, apple) or, for oauth2, only
	// the first half of the identity key (default: AuthURL's origin).
	Issuer      string   `json:"issuer"`
	Scopes      []string `json:"scopes"`
	AuthURL     string   `json:"authUrl"`
	TokenURL    string   `json:"tokenUrl"`
	UserInfoURL string   `json:"userInfoUrl"`
	// Claims maps userinfo fields of an oauth2 provider to ours.
	Claims ClaimMap `json:"claims"`
	// PKCE is on unless a provider cannot take it (Discord's preset).
	DisablePKCE bool `json:"disablePkce"`
	// Apple's client secret is a JWT signed with the team's key.
	TeamID         string `json:"teamId"`
	KeyID          string `json:"keyId"`
	PrivateKeyEnv  string `json:"privateKeyEnv"`
	PrivateKeyFile string `json:"privateKeyFile"`
}

// ClaimMap names the userinfo fields that hold the subject, the email,
// whether it is verified, the display name and the picture.
type ClaimMap struct {
	Subject       string `json:"subject"`
	Email         string `json:"email"`
	EmailVerified string `json:"emailVerified"`
	Name          string `json:"name"`
	Image         string `json:"image"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// LoadFile reads the providers file at path, applies the presets and
// reads each secret through getenv or from its file. An empty path means
// no providers.
func LoadFile(path string, getenv func(string) string) ([]ProviderConfig, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("providers file: %w", err)
	}
	var f File
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		return nil, fmt.Errorf("providers file %s: %w", path, err)
	}
	seen := map[string]bool{}
	for i := range f.Providers {
		p := &f.Providers[i]
		if err := p.applyPreset(); err != nil {
			return nil, fmt.Errorf("providers file %s: provider %q: %w", path, p.ID, err)
		}
		if seen[p.ID] {
			return nil, fmt.Errorf("providers file %s: provider %q is listed twice", path, p.ID)
		}
		seen[p.ID] = true
	}
	return f.Providers, nil
}

// applyPreset fills what a preset kind implies and checks the rest.
func (p *ProviderConfig) applyPreset() error {
	if p.ID == "" {
		p.ID = p.Kind
	}
	if !idPattern.MatchString(p.ID) {
		return fmt.Errorf("id must be 1-32 of a-z 0-9 _ -")
	}
	switch p.Kind {
	case KindGoogle:
		p.Issuer = orDefault(p.Issuer, "https://accounts.google.com")
	case KindApple:
		p.Issuer = orDefault(p.Issuer, "https://appleid.apple.com")
		if p.TeamID == "" || p.KeyID == "" || (p.PrivateKeyEnv == "" && p.PrivateKeyFile == "") {
			return fmt.Errorf("apple needs teamId, keyId and privateKeyEnv or privateKeyFile")
		}
	case KindDiscord:
		p.AuthURL = orDefault(p.AuthURL, "https://discord.com/oauth2/authorize")
		p.TokenURL = orDefault(p.TokenURL, "https://discord.com/api/oauth2/token")
		p.UserInfoURL = orDefault(p.UserInfoURL, "https://discord.com/api/users/@me")
		p.Issuer = orDefault(p.Issuer, "https://discord.com")
		if len(p.Scopes) == 0 {
			p.Scopes = []string{"identify", "email"}
		}
		p.Claims = ClaimMap{Subject: "id", Email: "email", EmailVerified: "verified", Name: "global_name", Image: ""}
	case KindOIDC:
		if p.Issuer == "" {
			return fmt.Errorf("oidc needs issuer")
		}
	case KindOAuth2:
		if p.AuthURL == "" || p.TokenURL == "" || p.UserInfoURL == "" {
			return fmt.Errorf("oauth2 needs authUrl, tokenUrl and userInfoUrl")
		}
		if p.Issuer == "" {
			p.Issuer = origin(p.AuthURL)
		}
	default:
		return fmt.Errorf("kind must be oidc, oauth2, google, apple or discord, got %q", p.Kind)
	}
	if p.ClientID == "" {
		return fmt.Errorf("clientId is required")
	}
	if p.Kind != KindApple && p.ClientSecretEnv == "" && p.ClientSecretFile == "" && !p.OpenID() {
		return fmt.Errorf("clientSecretEnv or clientSecretFile is required")
	}
	p.Claims = p.Claims.withDefaults()
	return nil
}

// OpenID reports whether the provider speaks OpenID Connect (ID tokens
// checked through the JWKS, a nonce, the iss response parameter).
func (p *ProviderConfig) OpenID() bool {
	return p.Kind == KindOIDC || p.Kind == KindGoogle || p.Kind == KindApple
}

func (c ClaimMap) withDefaults() ClaimMap {
	c.Subject = orDefault(c.Subject, "sub")
	c.Email = orDefault(c.Email, "email")
	c.EmailVerified = orDefault(c.EmailVerified, "email_verified")
	c.Name = orDefault(c.Name, "name")
	c.Image = orDefault(c.Image, "picture")
	return c
}

// readSecret returns the value of the environment variable env, or else
// the trimmed content of file; "" when neither is set.
func readSecret(env, file string, getenv func(string) string) (string, error) {
	if env != "" {
		v := getenv(env)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is empty", env)
		}
		return v, nil
	}
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func origin(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	if j := strings.IndexByte(raw[i+3:], '/'); j >= 0 {
		return raw[:i+3+j]
	}
	return raw
}

// appleSecretTTL is the life of the client secret JWT made for Apple;
// Apple accepts up to six months, a short one limits a leaked one.
const appleSecretTTL = time.Hour

// constantEqual compares two secrets in constant time.
func constantEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
