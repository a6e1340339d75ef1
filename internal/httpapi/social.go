package httpapi

import (
	"errors"
	"html/template"
	"mime"
	"net/http"
	"net/url"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// The provider and guest routes speak better-auth 1.7's wire protocol
// (/sign-in/social, /callback/{provider}, /link-social, /list-accounts,
// /unlink-account and the anonymous plugin's /sign-in/anonymous).

type socialRequest struct {
	Provider           string         `json:"provider"`
	CallbackURL        string         `json:"callbackURL"`
	NewUserCallbackURL string         `json:"newUserCallbackURL"`
	ErrorCallbackURL   string         `json:"errorCallbackURL"`
	DisableRedirect    bool           `json:"disableRedirect"`
	IDToken            *idTokenInput  `json:"idToken"`
	Scopes             []string       `json:"scopes"`
	RequestSignUp      bool           `json:"requestSignUp"`
	LoginHint          string         `json:"loginHint"`
	AdditionalData     map[string]any `json:"additionalData"`
	RememberMe         *bool          `json:"rememberMe"`
}

type idTokenInput struct {
	Token        string `json:"token"`
	Nonce        string `json:"nonce"`
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
	ExpiresAt    *int64 `json:"expiresAt"`
}

// Validate requires the provider.
func (in *socialRequest) Validate() error {
	if in.Provider == "" || len(in.Provider) > 64 {
		return platform.Invalid("provider", "is required")
	}
	return nil
}

func (in *socialRequest) start() auth.SocialStart {
	return auth.SocialStart{
		Provider: in.Provider, CallbackURL: in.CallbackURL, NewUserCallbackURL: in.NewUserCallbackURL,
		ErrorCallbackURL: in.ErrorCallbackURL, LoginHint: in.LoginHint, Scopes: in.Scopes, Remember: remember(in.RememberMe),
	}
}

type socialRedirectResponse struct {
	URL      string `json:"url"`
	Redirect bool   `json:"redirect"`
}

type linkResponse struct {
	URL      string `json:"url"`
	Status   bool   `json:"status"`
	Redirect bool   `json:"redirect"`
}

// optionalPlayer returns the caller's player session, or nil.
func optionalPlayer(d Deps, r *http.Request) (*auth.Principal, error) {
	p, err := d.Auth.SessionFromRequest(r.Context(), account.RealmPlayer, r)
	if errors.Is(err, auth.ErrUnauthenticated) {
		return nil, nil
	}
	return p, err
}

func handleSignInSocial(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.Origins().CheckLogin(r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		in, err := decode[socialRequest](r)
		if err == nil {
			_, err = d.Social.Provider(in.Provider)
		}
		var guest *auth.Principal
		if err == nil {
			guest, err = optionalPlayer(d, r)
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if in.IDToken != nil {
			if err := d.Social.CheckURLs(in.start()); err != nil {
				respondErr(w, r, d.Log, err)
				return
			}
			p, err := d.Social.SignInIDToken(r.Context(), in.Provider,
				auth.IDToken{Token: in.IDToken.Token, Nonce: in.IDToken.Nonce, AccessToken: in.IDToken.AccessToken,
					TrustDevice: d.Auth.Cookies().TrustDevice(account.RealmPlayer, r)}, guest, d.client(r))
			if req, ok := errors.AsType[*auth.SecondFactorRequired](err); ok {
				respondSecondFactor(w, d, req)
				return
			}
			if err != nil {
				respondErr(w, r, d.Log, err)
				return
			}
			setCookies(w, d.Auth.Cookies().SessionCookies(account.RealmPlayer, p.Token, p.Session.Remember))
			respond(w, http.StatusOK, signInResponse{Token: p.Token, User: p.User})
			return
		}
		red, err := d.Social.Begin(r.Context(), in.start(), nil, guest, d.client(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		http.SetCookie(w, d.Auth.Cookies().StateCookie(red.State))
		if !in.DisableRedirect {
			w.Header().Set("Location", red.URL)
		}
		respond(w, http.StatusOK, socialRedirectResponse{URL: red.URL, Redirect: !in.DisableRedirect})
	})
}

func handleLinkSocial(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[socialRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p := principalFrom(r)
		if in.IDToken != nil {
			err := d.Social.LinkIDToken(r.Context(), in.Provider,
				auth.IDToken{Token: in.IDToken.Token, Nonce: in.IDToken.Nonce, AccessToken: in.IDToken.AccessToken}, p)
			if err != nil {
				respondErr(w, r, d.Log, err)
				return
			}
			respond(w, http.StatusOK, linkResponse{URL: "", Status: true, Redirect: false})
			return
		}
		red, err := d.Social.Begin(r.Context(), in.start(), p, p, d.client(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		http.SetCookie(w, d.Auth.Cookies().StateCookie(red.State))
		if !in.DisableRedirect {
			w.Header().Set("Location", red.URL)
		}
		respond(w, http.StatusOK, socialRedirectResponse{URL: red.URL, Redirect: !in.DisableRedirect})
	})
}

// maxCallbackForm bounds a provider's form_post body.
const maxCallbackForm = 64 << 10

// handleCallbackPost answers a provider's form_post (Apple) with a 302 to
// the GET callback carrying the same parameters: the browser then sends
// the Lax state cookie, which a cross-site POST leaves behind.
func handleCallbackPost(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
			respondErr(w, r, d.Log, &httpError{http.StatusUnsupportedMediaType, codeUnsupportedMediaType,
				"send the callback as application/x-www-form-urlencoded"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxCallbackForm)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				respondErr(w, r, d.Log, &httpError{http.StatusRequestEntityTooLarge, codePayloadTooLarge, "callback form too large"})
				return
			}
			respondErr(w, r, d.Log, platform.Invalid("body", "the callback form could not be read"))
			return
		}
		q := r.URL.Query()
		for k, vs := range r.PostForm {
			if len(vs) > 0 && q.Get(k) == "" {
				q.Set(k, vs[0])
			}
		}
		target := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, target.String(), http.StatusFound)
	})
}

// handleCallback finishes a sign-in or link. Every outcome is a 302:
// to the callback URL with a session cookie, or to the error URL with
// better-auth's ?error= code; it never answers 5xx.
func handleCallback(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		cb := auth.Callback{
			Code: q.Get("code"), State: q.Get("state"), CookieState: d.Auth.Cookies().StateFromRequest(r),
			Issuer: q.Get("iss"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"), User: q.Get("user"),
			TrustDevice: d.Auth.Cookies().TrustDevice(account.RealmPlayer, r),
		}
		res, logErr := d.Social.Finish(r.Context(), r.PathValue("provider"), cb, d.client(r))
		if logErr != nil {
			d.Log.ErrorContext(r.Context(), "social callback failed", "provider", r.PathValue("provider"), "err", logErr)
		}
		http.SetCookie(w, d.Auth.Cookies().ClearStateCookie())
		if res.Principal != nil {
			setCookies(w, d.Auth.Cookies().SessionCookies(account.RealmPlayer, res.Principal.Token, res.Principal.Session.Remember))
		}
		if req := res.SecondFactor; req != nil {
			setCookies(w, d.Auth.Cookies().ClearCookies(req.Realm))
			http.SetCookie(w, d.Auth.Cookies().TwoFactorCookie(req.Realm, req.Token))
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, res.Location, http.StatusFound)
	})
}

var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in failed</title></head>
<body><h1>Sign-in failed</h1><p>The sign-in could not be completed ({{.}}). Go back to the game and try again.</p></body></html>
`))

// handleAuthError is the default page a failed callback lands on.
func handleAuthError(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := r.URL.Query().Get("error")
		if len(code) > 64 {
			code = code[:64]
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if err := errorPage.Execute(w, code); err != nil {
			d.Log.DebugContext(r.Context(), "error page write failed", "err", err)
		}
	})
}

func handleListAccounts(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := d.Social.ListAccounts(r.Context(), principalFrom(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, list)
	})
}

type unlinkRequest struct {
	AccountID  string `json:"accountId"`
	ProviderID string `json:"providerId"`
}

// Validate requires the account id (better-auth 1.7).
func (in *unlinkRequest) Validate() error {
	if in.AccountID == "" || len(in.AccountID) > 64 {
		return platform.Invalid("accountId", "is required")
	}
	return nil
}

func handleUnlinkAccount(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[unlinkRequest](r)
		if err == nil {
			err = d.Social.UnlinkAccount(r.Context(), principalFrom(r), in.AccountID)
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

func handleSignInAnonymous(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.Origins().CheckLogin(r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		_, err := decode[optionalBody](r)
		var current *auth.Principal
		if err == nil {
			current, err = optionalPlayer(d, r)
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p, err := d.Social.SignInAnonymous(r.Context(), current, d.client(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().SessionCookies(account.RealmPlayer, p.Token, true))
		respond(w, http.StatusOK, tokenUserResponse{Token: p.Token, User: p.User})
	})
}
