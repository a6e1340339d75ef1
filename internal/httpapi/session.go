package httpapi

import (
	"context"
	"net/http"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

type principalKey struct{}

// requirePlayer serves next only to a request with a valid player session,
// and answers 401 UNAUTHORIZED otherwise. next reads the caller with
// principalFrom.
func requirePlayer(d Deps, next http.Handler) http.Handler {
	return requireSession(d, account.RealmPlayer, next)
}

// requireAdmin serves next only to a request with a valid administrator
// session; a player session never opens an admin route.
// In production an administrator without a second factor gets 403
// SECOND_FACTOR_REQUIRED here; the enrolment routes of the admin mount
// sit outside this gate.
func requireAdmin(d Deps, next http.Handler) http.Handler {
	return requireSession(d, account.RealmAdmin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.RequireSecondFactor(r.Context(), principalFrom(r)); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// requireSession is the one session gate of the API. A state-changing
// request that carries cookies must come from a trusted origin (403
// MISSING_OR_NULL_ORIGIN / INVALID_ORIGIN) before its session is even
// looked at. A session whose expiry slid forward gets its cookie again.
func requireSession(d Deps, realm account.Realm, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.Origins().CheckOrigin(r); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p, err := d.Auth.SessionFromRequest(r.Context(), realm, r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if p.Refreshed {
			setCookies(w, d.Auth.Cookies().SessionCookies(realm, p.Token, true))
		}
		next.ServeHTTP(w, r.WithContext(withPrincipal(r.Context(), p)))
	})
}

func withPrincipal(ctx context.Context, p *auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the caller that requirePlayer or requireAdmin let
// through. Calling it on a route without either is a programming error,
// so it panics rather than let a handler run without a caller.
func principalFrom(r *http.Request) *auth.Principal {
	p, ok := r.Context().Value(principalKey{}).(*auth.Principal)
	if !ok {
		panic("httpapi: principalFrom on a route without requirePlayer/requireAdmin")
	}
	return p
}

func setCookies(w http.ResponseWriter, cookies []*http.Cookie) {
	for _, c := range cookies {
		http.SetCookie(w, c)
	}
}

// requireFresh serves next only when the caller's session was opened
// within the fresh age (403 SESSION_NOT_FRESH otherwise): the routes that
// change how an account is reached or signed in to, and take no password.
// It runs inside requirePlayer or requireAdmin.
func requireFresh(d Deps, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Auth.RequireFresh(principalFrom(r)); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
