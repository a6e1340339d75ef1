package httpapi

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// The handlers of the authentication mounts speak better-auth's wire
// protocol (routes, bodies, status codes, cookies) so that an unmodified
// better-auth client works against them; errors use the API's one error
// shape, which carries better-auth's codes.

type signUpRequest struct {
	Name        string  `json:"name"`
	Nickname    string  `json:"nickname"`
	Email       string  `json:"email"`
	Password    string  `json:"password"`
	Image       *string `json:"image"`
	CallbackURL string  `json:"callbackURL"`
	RememberMe  *bool   `json:"rememberMe"`
}

type signInRequest struct {
	Email       string `json:"email"`
	Password    string `json:"password"`
	CallbackURL string `json:"callbackURL"`
	RememberMe  *bool  `json:"rememberMe"`
}

// Validate requires the fields that better-auth's schema requires.
func (in *signInRequest) Validate() error {
	f := platform.FieldErrors{}
	if in.Email == "" {
		f.Add("email", "is required")
	}
	if in.Password == "" {
		f.Add("password", "is required")
	}
	return f.Err()
}

type tokenRequest struct {
	Token string `json:"token"`
}

// Validate requires the token.
func (in *tokenRequest) Validate() error {
	if in.Token == "" {
		return platform.Invalid("token", "is required")
	}
	return nil
}

type emailRequest struct {
	Email       string `json:"email"`
	CallbackURL string `json:"callbackURL"`
	RedirectTo  string `json:"redirectTo"`
}

// Validate requires the email.
func (in *emailRequest) Validate() error {
	if in.Email == "" {
		return platform.Invalid("email", "is required")
	}
	return nil
}

// optionalBody is the body of routes that need none: better-auth's client
// sends {} or nothing, and anything that is not a JSON object is refused.
type optionalBody struct {
	CallbackURL string `json:"callbackURL"`
}

type resetPasswordRequest struct {
	NewPassword string `json:"newPassword"`
	Token       string `json:"token"`
}

type sessionResponse struct {
	Session *auth.Session `json:"session"`
	User    *account.User `json:"user"`
}

type tokenUserResponse struct {
	Token string        `json:"token"`
	User  *account.User `json:"user"`
}

type signInResponse struct {
	Redirect bool          `json:"redirect"`
	Token    string        `json:"token"`
	URL      string        `json:"url,omitempty"`
	User     *account.User `json:"user"`
}

type statusResponse struct {
	Status  bool   `json:"status"`
	Message string `json:"message,omitempty"`
}

func remember(v *bool) bool { return v == nil || *v }

func (d Deps) client(r *http.Request) auth.Client {
	return auth.Client{IPAddress: clientIP(r, d.Config.TrustedProxies), UserAgent: r.UserAgent()}
}

// checkOrigin refuses a state-changing request that carries cookies from an
// untrusted origin (CSRF), before the handler runs.
func checkOrigin(d Deps, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.Origins().CheckOrigin(r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func handleSignUp(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.Origins().CheckLogin(r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		in, err := decode[signUpRequest](r)
		if err == nil {
			err = d.Auth.Origins().CheckCallback(in.CallbackURL, auth.CodeInvalidCallbackURL)
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		nu := account.NewUser{Email: in.Email, Name: in.Name, Nickname: in.Nickname, Password: in.Password, Image: in.Image}
		// A guest signing up keeps its account, and with it its player state.
		guest, err := optionalPlayer(d, r)
		var p *auth.Principal
		if err == nil && guest != nil && guest.User.IsAnonymous && d.Social != nil {
			p, err = d.Social.SignUpGuest(r.Context(), guest, nu, remember(in.RememberMe), d.client(r))
		} else if err == nil {
			p, err = d.Auth.SignUp(r.Context(), realm, nu, remember(in.RememberMe), d.client(r))
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().SessionCookies(realm, p.Token, p.Session.Remember))
		respond(w, http.StatusOK, tokenUserResponse{Token: p.Token, User: p.User})
	})
}

func handleSignIn(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.Origins().CheckLogin(r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		in, err := decode[signInRequest](r)
		if err == nil {
			err = d.Auth.Origins().CheckCallback(in.CallbackURL, auth.CodeInvalidCallbackURL)
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p, err := d.Auth.SignInTrusted(r.Context(), realm, in.Email, in.Password, remember(in.RememberMe), d.client(r),
			d.Auth.Cookies().TrustDevice(realm, r))
		if req, ok := errors.AsType[*auth.SecondFactorRequired](err); ok {
			respondSecondFactor(w, d, req)
			return
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().SessionCookies(realm, p.Token, p.Session.Remember))
		res := signInResponse{Token: p.Token, User: p.User}
		if in.CallbackURL != "" {
			// better-auth answers 200 with a Location the client follows itself.
			res.Redirect, res.URL = true, in.CallbackURL
			w.Header().Set("Location", in.CallbackURL)
		}
		respond(w, http.StatusOK, res)
	})
}

// handleSignOut ends the session if the cookie holds a valid one, and
// clears the cookies in any case.
func handleSignOut(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := decode[optionalBody](r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if p, err := d.Auth.SessionFromRequest(r.Context(), realm, r); err == nil {
			if err := d.Auth.SignOut(r.Context(), p); err != nil {
				respondErr(w, r, d.Log, err)
				return
			}
		} else if !errors.Is(err, auth.ErrUnauthenticated) {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().ClearCookies(realm))
		respond(w, http.StatusOK, map[string]bool{"success": true})
	})
}

// handleGetSession answers the caller's session and user, or JSON null
// with 200 when there is none, as better-auth does. A signed cookie whose
// session is gone is cleared; a cookie with a bad signature is left alone.
func handleGetSession(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
		token, ok := d.Auth.Cookies().TokenFromRequest(realm, r)
		if !ok {
			respond(w, http.StatusOK, nil)
			return
		}
		authenticate := d.Auth.Authenticate
		if r.URL.RawQuery != "" && r.URL.Query().Get("disableRefresh") == "true" {
			authenticate = d.Auth.AuthenticateNoRefresh
		}
		p, err := authenticate(r.Context(), realm, token)
		if errors.Is(err, auth.ErrUnauthenticated) {
			setCookies(w, d.Auth.Cookies().ClearCookies(realm))
			respond(w, http.StatusOK, nil)
			return
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if p.Refreshed {
			setCookies(w, d.Auth.Cookies().SessionCookies(realm, p.Token, true))
		}
		respondSession(w, p)
	})
}

func handleListSessions(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := d.Auth.ListSessions(r.Context(), principalFrom(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, list)
	})
}

func handleRevokeSession(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[tokenRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p := principalFrom(r)
		current, err := d.Auth.RevokeSession(r.Context(), p, in.Token)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if current {
			setCookies(w, d.Auth.Cookies().ClearCookies(p.Realm))
		}
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

func handleRevokeSessions(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := decode[optionalBody](r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p := principalFrom(r)
		if err := d.Auth.RevokeSessions(r.Context(), p); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().ClearCookies(p.Realm))
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

func handleRevokeOtherSessions(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := decode[optionalBody](r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if err := d.Auth.RevokeOtherSessions(r.Context(), principalFrom(r)); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

func handleAuthOK() http.Handler {
	return handleFixedJSON(func() any { return map[string]bool{"ok": true} })
}

// handleSendVerificationEmail mails a verification link; a signed-in
// caller may only ask for its own address.
func handleSendVerificationEmail(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[emailRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p, err := d.Auth.SessionFromRequest(r.Context(), realm, r)
		if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
			respondErr(w, r, d.Log, err)
			return
		}
		if err := d.Auth.SendVerificationEmail(r.Context(), realm, p, in.Email, in.CallbackURL, d.client(r)); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

// handleVerifyEmail is the mailed link. With a callbackURL it redirects
// there, adding ?error=CODE on failure; without, it answers JSON.
func handleVerifyEmail(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		callback := q.Get("callbackURL")
		if err := d.Auth.Origins().CheckCallback(callback, auth.CodeInvalidCallbackURL); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		_, err := d.Auth.VerifyEmail(r.Context(), realm, q.Get("token"))
		if answered := redirectOutcome(w, r, d, callback, err); answered {
			return
		}
		respond(w, http.StatusOK, map[string]any{"status": true, "user": nil})
	})
}

func handleRequestPasswordReset(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[emailRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if err := d.Auth.RequestPasswordReset(r.Context(), realm, in.Email, in.RedirectTo, d.client(r)); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, statusResponse{Status: true,
			Message: "If this email exists in our system, check your email for the reset link"})
	})
}

// handleResetPasswordLink is the mailed link: it checks the token without
// using it and sends the browser to the page where the user picks a new
// password, with ?token= (or ?error=INVALID_TOKEN).
func handleResetPasswordLink(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		callback := r.URL.Query().Get("callbackURL")
		if callback == "" {
			respondErr(w, r, d.Log, platform.Invalid("callbackURL", "is required"))
			return
		}
		if err := d.Auth.Origins().CheckCallback(callback, auth.CodeInvalidCallbackURL); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		token := r.PathValue("token")
		err := d.Auth.CheckResetToken(r.Context(), realm, token)
		if pe, ok := platform.As(err); ok && pe.Code == auth.CodeInvalidToken {
			redirect(w, withQuery(callback, "error", auth.CodeInvalidToken))
			return
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		redirect(w, withQuery(callback, "token", token))
	})
}

func handleResetPassword(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[resetPasswordRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if in.Token == "" {
			in.Token = r.URL.Query().Get("token")
		}
		if err := d.Auth.ResetPassword(r.Context(), realm, in.Token, in.NewPassword); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

// redirectOutcome answers a mailed link's outcome: with a callback, a
// refusal redirects there with ?error=CODE and success redirects there; an
// internal failure, or a refusal without a callback, is the error itself.
// It reports whether it answered; only success without a callback is left
// to the caller.
func redirectOutcome(w http.ResponseWriter, r *http.Request, d Deps, callback string, err error) bool {
	if callback != "" {
		if pe, ok := platform.As(err); ok && pe.Kind != platform.KindInternal && pe.Kind != platform.KindUnavailable {
			redirect(w, withQuery(callback, "error", pe.Code))
			return true
		}
	}
	if err != nil {
		respondErr(w, r, d.Log, err)
		return true
	}
	if callback != "" {
		redirect(w, callback)
		return true
	}
	return false
}

// redirect answers 302 to a target that CheckCallback has already allowed.
func redirect(w http.ResponseWriter, target string) {
	w.Header().Set("Location", target)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusFound)
}

// withQuery returns target with key=value added to its query string.
func withQuery(target, key, value string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
