// Package adminui is the web console at /admin: server-rendered pages over
// the administrator plane (package admin), embedded in the binary. Pages
// are plain HTML forms with no script at all, so the first paint waits on
// nothing and every control works from the keyboard; the Content-Security-
// Policy allows no script and no framing, and every form carries a CSRF
// token bound to the session besides the origin check the API applies.
package adminui

import (
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
)

//go:embed templates/*.html static/*
var assets embed.FS

// csp allows the console's own stylesheet and forms, and nothing else.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Deps are what the console calls.
type Deps struct {
	Log   *slog.Logger
	Auth  *auth.Service
	Admin *admin.Service
	// Lifecycle suspends and unsuspends accounts, as `users suspend` does.
	Lifecycle *lifecycle.Service
	// ClientIP names the client of a request, as the API does.
	ClientIP func(r *http.Request) string
	// StatusOf is the API's one mapping of error kinds to HTTP statuses,
	// so a page answers a refusal with the status its route would.
	StatusOf func(platform.Kind) int
}

type console struct {
	d     Deps
	pages map[string]*template.Template
}

// New returns the console, to be mounted at /admin and /admin/.
func New(d Deps) http.Handler {
	c := &console{d: d, pages: map[string]*template.Template{}}
	for _, name := range []string{"signin", "users", "user", "mail", "audit", "liveops"} {
		c.pages[name] = template.Must(template.ParseFS(assets, "templates/layout.html", "templates/"+name+".html"))
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		panic(err) // the directory is embedded above; only a broken build gets here
	}
	mux := http.NewServeMux()
	mux.Handle("GET /admin/static/", http.StripPrefix("/admin/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /admin", c.home)
	mux.HandleFunc("GET /admin/{$}", c.home)
	mux.HandleFunc("POST /admin/sign-in", c.signIn)
	mux.HandleFunc("POST /admin/sign-in/second-factor", c.signInSecondFactor)
	mux.HandleFunc("POST /admin/sign-out", c.signedIn("", c.signOut))
	mux.HandleFunc("GET /admin/users", c.signedIn(role.PlayersRead, c.users))
	mux.HandleFunc("GET /admin/users/{id}", c.signedIn(role.PlayersRead, c.user))
	mux.HandleFunc("POST /admin/users/{id}/revoke", c.signedIn(role.SessionsWrite, c.revoke))
	mux.HandleFunc("POST /admin/users/{id}/suspend", c.signedIn(role.SessionsWrite, c.suspend))
	mux.HandleFunc("POST /admin/users/{id}/unsuspend", c.signedIn(role.SessionsWrite, c.unsuspend))
	mux.HandleFunc("POST /admin/users/{id}/factors/reset", c.signedIn(role.SessionsWrite, c.resetFactors))
	mux.HandleFunc("GET /admin/mail", c.signedIn(role.PlayersRead, c.mail))
	mux.HandleFunc("POST /admin/mail/{id}/retry", c.signedIn(role.TokensIssue, c.retry))
	mux.HandleFunc("GET /admin/audit", c.signedIn(role.AuditRead, c.audit))
	mux.HandleFunc("GET /admin/liveops", c.signedIn(role.LiveOpsRead, c.liveOps))
	mux.HandleFunc("POST /admin/liveops/seeds", c.signedIn(role.LiveOpsWrite, c.setSeed))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

// view is what every page template reads.
type view struct {
	Title, Error, Notice, CSRF string
	Me                         *account.User
	Query                      string
	Page                       *admin.UserPage
	Detail                     *admin.UserDetail
	Mail                       []mail.Message
	Audit                      *admin.AuditPage
	AuditQuery                 admin.AuditQuery
	LiveOps                    *liveops.Snapshot
	CanWrite                   bool
	// SecondFactor makes the sign-in page ask for the code of an
	// administrator whose password was right.
	SecondFactor bool
}

// Can reports whether the signed-in administrator's role holds p, so that
// the navigation offers only the pages the role opens.
func (v view) Can(p string) bool {
	return v.Me != nil && role.Role(v.Me.Role).Can(role.Permission(p))
}

// caller is the signed-in administrator of a console request.
type caller struct {
	p    *auth.Principal
	csrf string
}

func (c *console) render(w http.ResponseWriter, status int, page string, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.pages[page].ExecuteTemplate(w, page+".html", v); err != nil {
		c.d.Log.Error("render console page", "page", page, "error", err)
	}
}

// fail shows err on page: the service's message for an expected error,
// a bare "internal error" (logged) otherwise.
func (c *console) fail(w http.ResponseWriter, r *http.Request, page string, v view, err error) {
	status := http.StatusInternalServerError
	if pe, ok := platform.As(err); ok && pe.Kind != platform.KindInternal {
		v.Error = pe.Message
		status = c.d.StatusOf(pe.Kind)
	} else {
		c.d.Log.ErrorContext(r.Context(), "console request failed", "path", r.URL.Path, "error", err)
		v.Error = "internal error"
	}
	c.render(w, status, page, v)
}

// csrfToken binds a form to one session: a MAC of the session token under
// the server's secret, so a page of another origin can neither read nor
// forge it.
func (c *console) csrfToken(sessionToken string) string {
	mac := hmac.New(sha256.New, []byte(c.d.Auth.Cookies().Sign("console-csrf")))
	mac.Write([]byte(sessionToken))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// loginCSRF is the sign-in form's token: without a session yet, it is a
// double-submit cookie checked against the form field.
const loginCSRFCookie = "platform-console-csrf"

// signedIn serves next to an administrator session whose role holds perm
// ("" for any), checking the origin and CSRF token of every POST; others
// get the sign-in page or a 403 naming the permission.
func (c *console) signedIn(perm role.Permission, next func(http.ResponseWriter, *http.Request, caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := c.d.Auth.SessionFromRequest(r.Context(), account.RealmAdmin, r)
		if err != nil {
			c.signInPage(w, r, http.StatusUnauthorized, "")
			return
		}
		if p.Refreshed {
			for _, ck := range c.d.Auth.Cookies().SessionCookies(account.RealmAdmin, p.Token, true) {
				http.SetCookie(w, ck)
			}
		}
		me := caller{p: p, csrf: c.csrfToken(p.Token)}
		v := view{Title: "Forbidden", Me: p.User, CSRF: me.csrf}
		if r.Method == http.MethodPost {
			if err := c.d.Auth.Origins().CheckOrigin(r); err != nil {
				c.fail(w, r, "users", v, err)
				return
			}
			if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(me.csrf)) {
				c.fail(w, r, "users", v, platform.Errorf(platform.KindForbidden, platform.CodeForbidden, "the form is stale or came from another site; reload the page"))
				return
			}
		}
		if perm != "" {
			if err := role.Role(p.User.Role).Check(perm); err != nil {
				c.fail(w, r, "users", v, err)
				return
			}
		}
		next(w, r, me)
	}
}

func (c *console) home(w http.ResponseWriter, r *http.Request) {
	if _, err := c.d.Auth.SessionFromRequest(r.Context(), account.RealmAdmin, r); err == nil {
		http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
		return
	}
	c.signInPage(w, r, http.StatusOK, "")
}

func (c *console) signInPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.signInStep(w, r, status, view{Title: "Sign in", Error: msg})
}

// signInStep renders a step of the sign-in with a fresh form token.
func (c *console) signInStep(w http.ResponseWriter, r *http.Request, status int, v view) {
	token := uuid.NewString()
	http.SetCookie(w, &http.Cookie{Name: loginCSRFCookie, Value: token, Path: "/admin", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	v.CSRF = token
	c.render(w, status, "signin", v)
}

// genuineSignIn reports whether a sign-in form came from the console
// itself (a trusted origin and the form's own token), and answers it
// when it did not.
func (c *console) genuineSignIn(w http.ResponseWriter, r *http.Request) bool {
	if err := c.d.Auth.Origins().CheckLogin(r); err != nil {
		c.signInPage(w, r, http.StatusForbidden, "This sign-in did not come from the console; try again.")
		return false
	}
	ck, err := r.Cookie(loginCSRFCookie)
	if err != nil || ck.Value == "" || !hmac.Equal([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) {
		c.signInPage(w, r, http.StatusForbidden, "The form is stale; try again.")
		return false
	}
	return true
}

func (c *console) signIn(w http.ResponseWriter, r *http.Request) {
	if !c.genuineSignIn(w, r) {
		return
	}
	client := auth.Client{IPAddress: c.d.ClientIP(r), UserAgent: r.UserAgent()}
	p, err := c.d.Auth.SignIn(r.Context(), account.RealmAdmin, r.PostFormValue("email"), r.PostFormValue("password"), false, client)
	if req, ok := errors.AsType[*auth.SecondFactorRequired](err); ok {
		// The password was right; the challenge rides in the signed
		// two_factor cookie, as on the API.
		http.SetCookie(w, c.d.Auth.Cookies().TwoFactorCookie(account.RealmAdmin, req.Token))
		c.signInStep(w, r, http.StatusOK, view{Title: "Second factor", SecondFactor: true})
		return
	}
	c.signedInAs(w, r, p, err, false)
}

// signInSecondFactor completes a sign-in with the authenticator's code or
// a backup code.
func (c *console) signInSecondFactor(w http.ResponseWriter, r *http.Request) {
	if !c.genuineSignIn(w, r) {
		return
	}
	client := auth.Client{IPAddress: c.d.ClientIP(r), UserAgent: r.UserAgent()}
	p, err := c.d.Auth.VerifySecondFactor(r.Context(), nil, client, auth.SecondFactorProof{
		Code: r.PostFormValue("code"), Backup: r.PostFormValue("backup") != "",
		ChallengeToken: c.d.Auth.Cookies().TwoFactorToken(account.RealmAdmin, r)})
	c.signedInAs(w, r, p, err, true)
}

// signedInAs sets the session of a completed sign-in and opens the
// players' page, or shows the step again with why it failed.
func (c *console) signedInAs(w http.ResponseWriter, r *http.Request, p *auth.Principal, err error, secondFactor bool) {
	if err != nil {
		msg := "internal error"
		if pe, ok := platform.As(err); ok && pe.Kind != platform.KindInternal {
			msg = pe.Message
		} else {
			c.d.Log.ErrorContext(r.Context(), "console sign-in failed", "error", err)
		}
		c.signInStep(w, r, http.StatusUnauthorized, view{Title: "Sign in", Error: msg, SecondFactor: secondFactor})
		return
	}
	if secondFactor {
		http.SetCookie(w, c.d.Auth.Cookies().ClearTwoFactorCookie(account.RealmAdmin))
	}
	for _, ck := range c.d.Auth.Cookies().SessionCookies(account.RealmAdmin, p.Token, false) {
		http.SetCookie(w, ck)
	}
	http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
}

func (c *console) signOut(w http.ResponseWriter, r *http.Request, me caller) {
	if err := c.d.Auth.SignOut(r.Context(), me.p); err != nil {
		c.fail(w, r, "users", view{Title: "Sign out", Me: me.p.User, CSRF: me.csrf}, err)
		return
	}
	for _, ck := range c.d.Auth.Cookies().ClearCookies(account.RealmAdmin) {
		http.SetCookie(w, ck)
	}
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}

func (c *console) users(w http.ResponseWriter, r *http.Request, me caller) {
	v := view{Title: "Players", Me: me.p.User, CSRF: me.csrf, Query: r.URL.Query().Get("query")}
	if v.Query != "" {
		page, err := c.d.Admin.SearchUsers(r.Context(), admin.UserQuery{Query: v.Query, Cursor: r.URL.Query().Get("cursor")})
		if err != nil {
			c.fail(w, r, "users", v, err)
			return
		}
		v.Page = page
	}
	c.render(w, http.StatusOK, "users", v)
}

func (c *console) user(w http.ResponseWriter, r *http.Request, me caller) {
	v := view{Title: "Player", Me: me.p.User, CSRF: me.csrf, Notice: notice(r)}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		c.fail(w, r, "users", v, platform.Invalid("id", "must be a player id"))
		return
	}
	if v.Detail, err = c.d.Admin.User(r.Context(), admin.ActorOf(me.p.User), id); err != nil {
		c.fail(w, r, "users", v, err)
		return
	}
	v.Title = "Player " + v.Detail.User.Nickname
	c.render(w, http.StatusOK, "user", v)
}

func (c *console) revoke(w http.ResponseWriter, r *http.Request, me caller) {
	id := r.PathValue("id")
	res, err := c.d.Admin.RevokeSessions(r.Context(), admin.ActorOf(me.p.User), id, admin.RevokeInput{Reason: r.PostFormValue("reason")})
	if err != nil {
		c.fail(w, r, "users", view{Title: "Player", Me: me.p.User, CSRF: me.csrf}, err)
		return
	}
	http.Redirect(w, r, "/admin/users/"+res.UserID.String()+"?revoked="+strconv.Itoa(res.Revoked), http.StatusSeeOther)
}

// notice is the message a page shows after a change redirected to it,
// chosen from fixed texts so that a link cannot put words in the console.
func notice(r *http.Request) string {
	q := r.URL.Query()
	if n, err := strconv.Atoi(q.Get("revoked")); err == nil && n >= 0 {
		return "Revoked " + strconv.Itoa(n) + " session(s)."
	}
	return map[string]string{"retried": "The message is queued again.", "published": "Published a new live-ops version.",
		"suspended": "Suspended: every session ended, sign-in refused.", "unsuspended": "The suspension is lifted.",
		"factors": "Second factors and passkeys removed; the player was mailed and signed out."}[q.Get("done")]
}

func (c *console) mail(w http.ResponseWriter, r *http.Request, me caller) {
	v := view{Title: "Mail outbox", Me: me.p.User, CSRF: me.csrf, Notice: notice(r)}
	var err error
	if v.Mail, err = c.d.Admin.Mail(r.Context(), admin.ActorOf(me.p.User), mail.Filter{Limit: 100}); err != nil {
		c.fail(w, r, "mail", v, err)
		return
	}
	c.render(w, http.StatusOK, "mail", v)
}

func (c *console) retry(w http.ResponseWriter, r *http.Request, me caller) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err == nil {
		_, err = c.d.Admin.MailRetry(r.Context(), admin.ActorOf(me.p.User), "from the console", id)
	}
	if err != nil {
		c.fail(w, r, "mail", view{Title: "Mail outbox", Me: me.p.User, CSRF: me.csrf}, err)
		return
	}
	http.Redirect(w, r, "/admin/mail?done=retried", http.StatusSeeOther)
}

func (c *console) audit(w http.ResponseWriter, r *http.Request, me caller) {
	q := r.URL.Query()
	v := view{Title: "Audit trail", Me: me.p.User, CSRF: me.csrf,
		AuditQuery: admin.AuditQuery{User: q.Get("user"), Action: q.Get("action"), Cursor: q.Get("cursor")}}
	var err error
	if v.Audit, err = c.d.Admin.Audit(r.Context(), v.AuditQuery); err != nil {
		c.fail(w, r, "audit", v, err)
		return
	}
	c.render(w, http.StatusOK, "audit", v)
}

func (c *console) liveOps(w http.ResponseWriter, r *http.Request, me caller) {
	v := view{Title: "Live-ops", Me: me.p.User, CSRF: me.csrf, Notice: notice(r),
		CanWrite: role.Role(me.p.User.Role).Can(role.LiveOpsWrite)}
	snap, err := c.d.Admin.LiveOps(r.Context())
	if err != nil && platform.ErrorCode(err) != liveops.CodeNotPublished {
		c.fail(w, r, "liveops", v, err)
		return
	}
	v.LiveOps = snap
	c.render(w, http.StatusOK, "liveops", v)
}

func (c *console) setSeed(w http.ResponseWriter, r *http.Request, me caller) {
	seed, err := strconv.ParseInt(r.PostFormValue("seed"), 10, 64)
	if err != nil {
		seed = 0 // refused below as not positive
	}
	in := admin.SeedInput{Size: r.PostFormValue("size"), Seed: seed, Reason: r.PostFormValue("reason")}
	if _, err := c.d.Admin.SetSeed(r.Context(), admin.ActorOf(me.p.User), in); err != nil {
		c.fail(w, r, "liveops", view{Title: "Live-ops", Me: me.p.User, CSRF: me.csrf}, err)
		return
	}
	http.Redirect(w, r, "/admin/liveops?done=published", http.StatusSeeOther)
}

// suspend suspends the player until the form's date (none: until lifted),
// through the service `users suspend` calls.
func (c *console) suspend(w http.ResponseWriter, r *http.Request, me caller) {
	var until time.Time
	if v := r.PostFormValue("until"); v != "" {
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			c.fail(w, r, "users", view{Title: "Player", Me: me.p.User, CSRF: me.csrf},
				platform.Invalid("until", "must be a date, YYYY-MM-DD"))
			return
		}
		until = t.UTC()
	}
	id := r.PathValue("id")
	_, err := c.d.Lifecycle.Suspend(r.Context(), admin.ActorOf(me.p.User), account.RealmPlayer, id, r.PostFormValue("reason"), until)
	c.afterChange(w, r, me, id, "suspended", err)
}

func (c *console) unsuspend(w http.ResponseWriter, r *http.Request, me caller) {
	id := r.PathValue("id")
	_, err := c.d.Lifecycle.Unsuspend(r.Context(), admin.ActorOf(me.p.User), account.RealmPlayer, id, r.PostFormValue("reason"))
	c.afterChange(w, r, me, id, "unsuspended", err)
}

func (c *console) resetFactors(w http.ResponseWriter, r *http.Request, me caller) {
	id := r.PathValue("id")
	_, err := c.d.Auth.SupportResetFactors(r.Context(), admin.ActorOf(me.p.User), account.RealmPlayer, id, r.PostFormValue("reason"))
	c.afterChange(w, r, me, id, "factors", err)
}

// afterChange shows the player's page again with the notice done, or the
// error of the change.
func (c *console) afterChange(w http.ResponseWriter, r *http.Request, me caller, id, done string, err error) {
	if err != nil {
		c.fail(w, r, "users", view{Title: "Player", Me: me.p.User, CSRF: me.csrf}, err)
		return
	}
	http.Redirect(w, r, "/admin/users/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
}
