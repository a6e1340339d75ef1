package social

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadFileAppliesPresetsAndRefusesBadEntries(t *testing.T) {
	path := writeFile(t, "p.yaml", `providers:
  - kind: google
    clientId: g
    clientSecretEnv: G_SECRET
  - kind: discord
    clientId: d
    clientSecretFile: /run/secret
  - id: corp
    kind: oidc
    issuer: https://id.example.com/
    clientId: c
`)
	got, err := LoadFile(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != "google" || got[0].Issuer != "https://accounts.google.com" || !got[0].OpenID() {
		t.Fatalf("google preset: %+v", got[0])
	}
	d := got[1]
	if d.ID != "discord" || d.OpenID() || d.UserInfoURL != "https://discord.com/api/users/@me" || d.Claims.EmailVerified != "verified" ||
		d.Claims.Subject != "id" || d.Issuer != "https://discord.com" {
		t.Fatalf("discord preset: %+v", d)
	}
	if got[2].Claims.Subject != "sub" || got[2].ClientSecretEnv != "" {
		t.Fatalf("oidc public client: %+v", got[2])
	}

	bad := map[string]string{
		"unknown kind":      "providers:\n  - {id: x, kind: saml, clientId: a}\n",
		"no issuer":         "providers:\n  - {id: x, kind: oidc, clientId: a}\n",
		"no endpoints":      "providers:\n  - {id: x, kind: oauth2, clientId: a, clientSecretEnv: S}\n",
		"no secret":         "providers:\n  - {id: x, kind: discord, clientId: a}\n",
		"apple without key": "providers:\n  - {id: x, kind: apple, clientId: a, teamId: T}\n",
		"bad id":            "providers:\n  - {id: 'Bad Id', kind: google, clientId: a, clientSecretEnv: S}\n",
		"twice":             "providers:\n  - {kind: google, clientId: a, clientSecretEnv: S}\n  - {kind: google, clientId: b, clientSecretEnv: S}\n",
		"unknown field":     "providers:\n  - {kind: google, clientId: a, clientSecret: inline}\n",
	}
	for name, text := range bad {
		if _, err := LoadFile(writeFile(t, "p.yaml", text), func(string) string { return "" }); err == nil {
			t.Errorf("%s: loaded %q", name, text)
		}
	}
}

func TestSecretsComeFromTheEnvironmentOrAFileAndStayOutOfErrors(t *testing.T) {
	cfgs := []ProviderConfig{{ID: "d", Kind: KindDiscord, ClientID: "d", ClientSecretEnv: "D_SECRET"}}
	ps, err := New(cfgs, func(k string) string { return map[string]string{"D_SECRET": "s3cret-value"}[k] }, nil)
	if err != nil || ps["d"].clientSecret != "s3cret-value" {
		t.Fatalf("secret from the environment: %v", err)
	}
	cfgs[0].ClientSecretEnv, cfgs[0].ClientSecretFile = "", writeFile(t, "secret", "file-secret\n")
	if ps, err = New(cfgs, func(string) string { return "" }, nil); err != nil || ps["d"].clientSecret != "file-secret" {
		t.Fatalf("secret from a file: %v", err)
	}
	cfgs[0].ClientSecretEnv, cfgs[0].ClientSecretFile = "EMPTY", ""
	if _, err := New(cfgs, func(string) string { return "" }, nil); err == nil || !strings.Contains(err.Error(), "EMPTY") {
		t.Fatalf("an empty secret variable: %v", err)
	}
}

func TestAppleClientSecretIsAnES256JWTForApple(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	cfg := ProviderConfig{ID: "apple", Kind: KindApple, ClientID: "com.example.game", TeamID: "TEAM123", KeyID: "KEY456", PrivateKeyEnv: "APPLE_KEY"}
	if err := cfg.applyPreset(); err != nil {
		t.Fatal(err)
	}
	ps, err := New([]ProviderConfig{cfg}, func(k string) string { return map[string]string{"APPLE_KEY": p8}[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ps["apple"]
	if !p.FormPost() {
		t.Fatal("apple answers with a form post")
	}
	now := time.Now()
	raw, err := p.appleSecret(now)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Headers[0].KeyID != "KEY456" {
		t.Errorf("kid %q", tok.Headers[0].KeyID)
	}
	var c jwt.Claims
	if err := tok.Claims(&key.PublicKey, &c); err != nil {
		t.Fatal(err)
	}
	if c.Issuer != "TEAM123" || c.Subject != "com.example.game" || !c.Audience.Contains("https://appleid.apple.com") ||
		c.Expiry.Time().Sub(now) > time.Hour+time.Second {
		t.Fatalf("apple client secret claims %+v", c)
	}
}

func TestClaimsOfProviders(t *testing.T) {
	if got := AppleName(`{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"a@example.com"}`); got != "Ada Lovelace" {
		t.Errorf("AppleName = %q", got)
	}
	for _, bad := range []string{"", "{", strings.Repeat("x", 5000)} {
		if got := AppleName(bad); got != "" {
			t.Errorf("AppleName(%.20q) = %q", bad, got)
		}
	}
	d := &Provider{cfg: ProviderConfig{Kind: KindDiscord, Claims: ClaimMap{Subject: "id", Email: "email", EmailVerified: "verified", Name: "global_name"}.withDefaults()}}
	prof := d.profileFrom(map[string]any{"id": "80351110224678912", "email": "n@example.com", "verified": true, "username": "nelly"})
	if prof.Email != "n@example.com" || !prof.EmailVerified || prof.Name != "nelly" {
		t.Errorf("discord profile %+v", prof)
	}
	if claimString(float64(12345678)) != "12345678" || !claimBool("true") || claimBool("yes") {
		t.Error("claim readers")
	}
}
