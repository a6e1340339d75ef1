package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
)

// passkeyClientEnv names the bundle of the official better-auth client
// and passkey plugin that scripts/passkey-browser.sh builds.
const passkeyClientEnv = "PLATFORM_PASSKEY_CLIENT_JS"

// passkeyPage is the web page of the test: the bundle, nothing else.
const passkeyPage = `<!doctype html><meta charset="utf-8"><title>passkeys</title><script src="/client.js"></script>`

// passkeySite serves the test page and the client bundle on
// http://localhost:<port> (a secure context and a valid relying party id)
// and passes /api to the platform, so the page and the API share one
// origin, as a deployed web client behind one host would.
func passkeySite(t *testing.T) (origin string, srv *apitest.Server) {
	t.Helper()
	bundle, err := os.ReadFile(os.Getenv(passkeyClientEnv))
	if err != nil {
		t.Fatalf("read the client bundle: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin = fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	srv = apitest.New(t, apitest.WithEnv("PLATFORM_TRUSTED_ORIGINS", origin),
		apitest.WithEnv("PLATFORM_PASSKEY_RP_ID", "localhost"), apitest.WithEnv("PLATFORM_PASSKEY_ORIGINS", origin))
	api, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", httputil.NewSingleHostReverseProxy(api))
	mux.HandleFunc("/client.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(bundle) //nolint:errcheck // the browser sees a short script
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(passkeyPage)) //nolint:errcheck // the browser sees a short page
	})
	site := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go site.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { site.Close() })
	return origin, srv
}

// browser starts Debian's chromium headless with a DevTools virtual
// authenticator (CTAP2, resident keys, user verification, presence
// simulated) and returns its context and the authenticator's id.
func browser(t *testing.T) (context.Context, webauthn.AuthenticatorID) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath("/usr/bin/chromium"),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{Protocol: webauthn.AuthenticatorProtocolCtap2,
			Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
			IsUserVerified: true, AutomaticPresenceSimulation: true}})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, res.AuthenticatorID
}

// step runs one script against the page's client (c) and decodes what
// it returns; a script returns {error} when the client reports one.
func step(t *testing.T, ctx context.Context, name, script string) map[string]any {
	t.Helper()
	run, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	raw, err := chromedp.Run(run, chromedp.Evaluate[string](`(async () => JSON.stringify(await (async () => {`+script+`})()))()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("%s: %s: %v", name, raw, err)
	}
	return out
}

// A player signs up, adds a passkey with the official passkey client,
// signs out, signs in with the passkey alone and holds a session; a
// cloned authenticator (its counter behind the stored one) is refused and
// audited.
func TestPasskeyInBrowser(t *testing.T) {
	if os.Getenv(passkeyClientEnv) == "" {
		t.Skip("needs the client bundle: run scripts/passkey-browser.sh")
	}
	origin, srv := passkeySite(t)
	ctx, authenticator := browser(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(origin+"/")); err != nil {
		t.Fatal(err)
	}
	email := fmt.Sprintf("pat-%d@example.com", time.Now().UnixNano())
	out := step(t, ctx, "sign up and add a passkey", `
		window.c = makeClient("/api/auth/player");
		let r = await c.signUp.email({ name: "Pat", nickname: "pat_passkey", email: "`+email+`", password: "correct horse battery" });
		if (r.error) return { error: r.error };
		r = await c.passkey.addPasskey({ name: "laptop" });
		if (r.error) return { error: r.error };
		const list = await c.passkey.listUserPasskeys();
		return { name: list.data[0].name, count: list.data.length };`)
	if out["error"] != nil || out["name"] != "laptop" || out["count"] != 1.0 {
		t.Fatalf("add a passkey: %v", out)
	}
	out = step(t, ctx, "sign out, sign in with the passkey", `
		await c.signOut();
		if ((await c.getSession()).data) return { error: "still signed in" };
		const r = await c.signIn.passkey();
		if (r.error) return { error: r.error };
		const s = await c.getSession();
		return { email: s.data && s.data.user.email };`)
	if out["error"] != nil || out["email"] != email {
		t.Fatalf("passkey sign-in: %v", out)
	}

	// Clone the credential with its counter back at zero: the next
	// assertion's counter is not above the stored one.
	creds, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: authenticator})
	if err != nil || len(creds.Credentials) != 1 {
		t.Fatalf("credentials %v (%v)", creds, err)
	}
	c := creds.Credentials[0]
	if _, err := chromedp.Call(ctx, webauthn.RemoveCredential, webauthn.RemoveCredentialParams{AuthenticatorID: authenticator, CredentialID: c.CredentialID}); err != nil {
		t.Fatal(err)
	}
	// cdproto's Credential always sends the CMTG fields, which this
	// authenticator refuses; the clone goes as plain parameters.
	addCredential := cdp.Command[map[string]any, cdp.Empty]{Method: webauthn.CommandAddCredential}
	if _, err := chromedp.Call(ctx, addCredential, map[string]any{"authenticatorId": authenticator, "credential": map[string]any{
		"credentialId": c.CredentialID, "isResidentCredential": true, "rpId": c.RpID, "privateKey": c.PrivateKey,
		"userHandle": c.UserHandle, "signCount": 0, "userName": c.UserName, "userDisplayName": c.UserDisplayName,
		"backupEligibility": c.BackupEligibility, "backupState": c.BackupState}}); err != nil {
		t.Fatal(err)
	}
	out = step(t, ctx, "sign in with a cloned passkey", `
		await c.signOut();
		const r = await c.signIn.passkey();
		const s = await c.getSession();
		return { code: r.error && r.error.code, status: r.error && r.error.status, session: !!s.data };`)
	if out["code"] != auth.CodeAuthenticationFailed || out["status"] != 401.0 || out["session"] != false {
		t.Fatalf("a cloned passkey: %v", out)
	}
	entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Action: auth.ActionPasskeyCounterWentBack})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit of the counter %v (%v)", entries, err)
	}
}
