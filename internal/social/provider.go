package social

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
)

// Profile is who a provider says the user is. Issuer and Subject together
// are the identity's key.
type Profile struct {
	Issuer        string
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
	Image         string
}

// Failures a caller maps to better-auth's error codes.
var (
	// ErrIssuerMismatch: the iss response parameter names another issuer.
	ErrIssuerMismatch = errors.New("issuer mismatch")
	// ErrInvalidCode: the provider refused the code (replayed, expired).
	ErrInvalidCode = errors.New("provider refused the code")
	// ErrUserInfo: the provider did not say who the user is (down, slow,
	// an answer without a subject, or a token that does not verify).
	ErrUserInfo = errors.New("unable to get user info")
	// ErrInvalidToken: an ID token that does not verify (signature,
	// issuer, audience, expiry or nonce).
	ErrInvalidToken = errors.New("invalid id token")
	// ErrIDTokenNotSupported: the provider issues no ID tokens.
	ErrIDTokenNotSupported = errors.New("provider issues no id tokens")
)

// Provider is one configured identity provider. OpenID providers are
// discovered on first use, and again after a failed discovery, so that a
// provider that is down when the server starts does not stop it.
type Provider struct {
	cfg          ProviderConfig
	clientSecret string
	appleKey     *ecdsa.PrivateKey
	client       *http.Client

	mu        sync.Mutex
	discovery *oidc.Provider
}

// New returns the providers of cfgs, reading their secrets through getenv
// or from their files. client makes every call to the providers; its
// Timeout bounds each one.
func New(cfgs []ProviderConfig, getenv func(string) string, client *http.Client) (map[string]*Provider, error) {
	out := make(map[string]*Provider, len(cfgs))
	for _, c := range cfgs {
		p := &Provider{cfg: c, client: client}
		secret, err := readSecret(c.ClientSecretEnv, c.ClientSecretFile, getenv)
		if err != nil {
			return nil, fmt.Errorf("provider %s: client secret: %w", c.ID, err)
		}
		p.clientSecret = secret
		if c.Kind == KindApple {
			if p.appleKey, err = readAppleKey(c, getenv); err != nil {
				return nil, fmt.Errorf("provider %s: %w", c.ID, err)
			}
		}
		out[c.ID] = p
	}
	return out, nil
}

// ID is the provider's name in the API.
func (p *Provider) ID() string { return p.cfg.ID }

// OpenID reports whether the provider issues ID tokens.
func (p *Provider) OpenID() bool { return p.cfg.OpenID() }

// FormPost reports whether the provider answers with a form POST to the
// callback (Apple, which does so whenever name or email is asked for).
func (p *Provider) FormPost() bool { return p.cfg.Kind == KindApple }

func (p *Provider) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(context.WithValue(ctx, oauth2.HTTPClient, p.client), p.client)
}

// discover returns the provider's discovery document, fetching it once.
func (p *Provider) discover(ctx context.Context) (*oidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.discovery != nil {
		return p.discovery, nil
	}
	d, err := oidc.NewProvider(p.ctx(ctx), p.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w: %w", p.cfg.ID, ErrUserInfo, err)
	}
	p.discovery = d
	return d, nil
}

// oauthConfig returns the OAuth2 client of the provider for redirectURI.
func (p *Provider) oauthConfig(ctx context.Context, redirectURI string, scopes []string) (*oauth2.Config, error) {
	c := &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.clientSecret, RedirectURL: redirectURI}
	base := p.cfg.Scopes
	if p.OpenID() {
		d, err := p.discover(ctx)
		if err != nil {
			return nil, err
		}
		c.Endpoint = d.Endpoint()
		if len(base) == 0 {
			base = []string{"email", "profile"}
			if p.cfg.Kind == KindApple {
				base = []string{"email", "name"}
			}
		}
		base = append([]string{oidc.ScopeOpenID}, base...)
	} else {
		c.Endpoint = oauth2.Endpoint{AuthURL: p.cfg.AuthURL, TokenURL: p.cfg.TokenURL}
	}
	if p.appleKey != nil {
		secret, err := p.appleSecret(time.Now())
		if err != nil {
			return nil, err
		}
		c.ClientSecret = secret
		c.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	c.Scopes = dedupe(append(base, scopes...))
	return c, nil
}

// AuthRequest is what an authorization URL carries besides the client.
type AuthRequest struct {
	State, Verifier, Nonce, RedirectURI, LoginHint string
	Scopes                                         []string
}

// AuthCodeURL returns the URL that sends the user to the provider.
func (p *Provider) AuthCodeURL(ctx context.Context, r AuthRequest) (string, error) {
	c, err := p.oauthConfig(ctx, r.RedirectURI, r.Scopes)
	if err != nil {
		return "", err
	}
	var opts []oauth2.AuthCodeOption
	if !p.cfg.DisablePKCE {
		opts = append(opts, oauth2.S256ChallengeOption(r.Verifier))
	}
	if p.OpenID() {
		opts = append(opts, oidc.Nonce(r.Nonce))
	}
	if r.LoginHint != "" {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", r.LoginHint))
	}
	if p.FormPost() {
		opts = append(opts, oauth2.SetAuthURLParam("response_mode", "form_post"))
	}
	return c.AuthCodeURL(r.State, opts...), nil
}

// CheckIssuer compares the iss response parameter (RFC 9207), when the
// provider sent one, with the discovered issuer.
func (p *Provider) CheckIssuer(ctx context.Context, iss string) error {
	if iss == "" || !p.OpenID() {
		return nil
	}
	d, err := p.discover(ctx)
	if err != nil {
		return err
	}
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if err := d.Claims(&meta); err != nil || meta.Issuer != iss {
		return ErrIssuerMismatch
	}
	return nil
}

// Exchange trades a code for tokens and returns the user's profile. For an
// OpenID provider the ID token must verify and carry nonce, and a userinfo
// answer must name the same subject.
func (p *Provider) Exchange(ctx context.Context, code, verifier, nonce, redirectURI string) (*Profile, error) {
	c, err := p.oauthConfig(ctx, redirectURI, nil)
	if err != nil {
		return nil, err
	}
	var opts []oauth2.AuthCodeOption
	if !p.cfg.DisablePKCE {
		opts = append(opts, oauth2.VerifierOption(verifier))
	}
	tok, err := c.Exchange(p.ctx(ctx), code, opts...)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return nil, fmt.Errorf("%w: %s", ErrInvalidCode, re.ErrorCode)
		}
		return nil, fmt.Errorf("%w: exchange: %w", ErrUserInfo, err)
	}
	if !p.OpenID() {
		return p.userInfo(ctx, tok)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, fmt.Errorf("%w: no id_token", ErrUserInfo)
	}
	prof, err := p.VerifyIDToken(ctx, raw, nonce, true)
	if err != nil {
		return nil, err
	}
	return p.addUserInfo(ctx, prof, tok)
}

// VerifyIDToken checks an ID token's signature through the provider's
// JWKS, its issuer, audience (the client id or one of Audiences) and
// expiry, and that it carries nonce (when requireNonce or when nonce is
// given), then returns its profile.
func (p *Provider) VerifyIDToken(ctx context.Context, raw, nonce string, requireNonce bool) (*Profile, error) {
	if !p.OpenID() {
		return nil, ErrIDTokenNotSupported
	}
	d, err := p.discover(ctx)
	if err != nil {
		return nil, err
	}
	// The audience is checked below against every accepted client id.
	v := d.VerifierContext(p.ctx(ctx), &oidc.Config{SkipClientIDCheck: true})
	tok, err := v.Verify(p.ctx(ctx), raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if !p.audienceOK(tok.Audience) {
		return nil, fmt.Errorf("%w: audience %v", ErrInvalidToken, tok.Audience)
	}
	if (requireNonce || nonce != "") && !constantEqual(tok.Nonce, nonce) {
		return nil, fmt.Errorf("%w: nonce", ErrInvalidToken)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	prof := p.profileFrom(claims)
	prof.Issuer, prof.Subject = tok.Issuer, tok.Subject
	return prof, nil
}

func (p *Provider) audienceOK(aud []string) bool {
	for _, a := range aud {
		if a == p.cfg.ClientID {
			return true
		}
		for _, b := range p.cfg.Audiences {
			if a == b {
				return true
			}
		}
	}
	return false
}

// CompleteProfile fills what a verified ID token left out from the
// userinfo endpoint, asked with the access token a native client holds;
// the answer's subject must be the token's.
func (p *Provider) CompleteProfile(ctx context.Context, prof *Profile, accessToken string) (*Profile, error) {
	if accessToken == "" {
		return prof, nil
	}
	return p.addUserInfo(ctx, prof, &oauth2.Token{AccessToken: accessToken, TokenType: "Bearer"})
}

// addUserInfo fills what the ID token left out (many providers put the
// email only in userinfo) from the userinfo endpoint, whose subject must
// be the token's.
func (p *Provider) addUserInfo(ctx context.Context, prof *Profile, tok *oauth2.Token) (*Profile, error) {
	if prof.Email != "" {
		return prof, nil
	}
	d, err := p.discover(ctx)
	if err != nil {
		return nil, err
	}
	if d.UserInfoEndpoint() == "" {
		return prof, nil
	}
	info, err := d.UserInfo(p.ctx(ctx), oauth2.StaticTokenSource(tok))
	if err != nil {
		return nil, fmt.Errorf("%w: userinfo: %w", ErrUserInfo, err)
	}
	if info.Subject != prof.Subject {
		return nil, fmt.Errorf("%w: userinfo subject differs from the id token's", ErrUserInfo)
	}
	var claims map[string]any
	if err := info.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUserInfo, err)
	}
	more := p.profileFrom(claims)
	prof.Email, prof.EmailVerified = more.Email, more.EmailVerified
	prof.Name = orDefault(prof.Name, more.Name)
	prof.Image = orDefault(prof.Image, more.Image)
	return prof, nil
}

// maxUserInfo bounds a userinfo answer.
const maxUserInfo = 1 << 20

// userInfo asks a plain OAuth2 provider's userinfo endpoint who the user is.
func (p *Provider) userInfo(ctx context.Context, tok *oauth2.Token) (*Profile, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.UserInfoURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUserInfo, err)
	}
	req.Header.Set("Accept", "application/json")
	tok.SetAuthHeader(req)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUserInfo, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUserInfo))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: userinfo status %d", ErrUserInfo, resp.StatusCode)
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUserInfo, err)
	}
	prof := p.profileFrom(claims)
	prof.Issuer = p.cfg.Issuer
	prof.Subject = claimString(claims[p.cfg.Claims.Subject])
	if prof.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", ErrUserInfo)
	}
	return prof, nil
}

func (p *Provider) profileFrom(claims map[string]any) *Profile {
	m := p.cfg.Claims
	prof := &Profile{
		Email: claimString(claims[m.Email]), Name: claimString(claims[m.Name]), Image: claimString(claims[m.Image]),
		EmailVerified: claimBool(claims[m.EmailVerified]),
	}
	if prof.Name == "" && p.cfg.Kind == KindDiscord {
		prof.Name = claimString(claims["username"])
	}
	return prof
}

// claimString reads a string or number claim (Discord ids are strings,
// GitHub's are numbers).
func claimString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// claimBool reads a boolean that some providers send as a string (Apple).
func claimBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "true"
	}
	return false
}

// appleSecret signs the short-lived ES256 JWT Apple takes as the client
// secret.
func (p *Provider) appleSecret(now time.Time) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: p.appleKey},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", p.cfg.KeyID))
	if err != nil {
		return "", fmt.Errorf("apple client secret: %w", err)
	}
	claims := jwt.Claims{
		Issuer: p.cfg.TeamID, Subject: p.cfg.ClientID, Audience: jwt.Audience{"https://appleid.apple.com"},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(appleSecretTTL)),
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("apple client secret: %w", err)
	}
	return s, nil
}

func readAppleKey(c ProviderConfig, getenv func(string) string) (*ecdsa.PrivateKey, error) {
	pemText, err := readSecret(c.PrivateKeyEnv, c.PrivateKeyFile, getenv)
	if err != nil {
		return nil, fmt.Errorf("apple private key: %w", err)
	}
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, fmt.Errorf("apple private key: not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("apple private key: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("apple private key: not an EC key")
	}
	return ec, nil
}

// AppleName reads the name Apple posts in the user form field, on the
// first sign-in only.
func AppleName(userField string) string {
	var u struct {
		Name struct {
			FirstName string `json:"firstName"`
			LastName  string `json:"lastName"`
		} `json:"name"`
	}
	if userField == "" || len(userField) > 4096 || json.Unmarshal([]byte(userField), &u) != nil {
		return ""
	}
	return strings.TrimSpace(u.Name.FirstName + " " + u.Name.LastName)
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
