package httpapi

import (
	"net/http"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/role"
)

// requirePermission is the one gate of administrator routes: 401
// UNAUTHORIZED without an administrator session (a player session
// included, see requireAdmin), 403 FORBIDDEN when the administrator's role
// lacks perm. The role is read from the account on every request, so a
// role change applies to the next request.
func requirePermission(d Deps, perm role.Permission, next http.Handler) http.Handler {
	return requireAdmin(d, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := role.Role(principalFrom(r).User.Role).Check(perm); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// callerOf is the administrator behind an admin route's request.
func callerOf(r *http.Request) admin.Caller {
	u := principalFrom(r).User
	return admin.Caller{ID: u.ID, Email: u.Email, Name: u.Name, Role: role.Role(u.Role)}
}

func handleAdminBootstrap(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := d.Console.Bootstrap(r.Context(), callerOf(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, b)
	})
}

func handleLiveOpsAdminBootstrap(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap, err := d.LiveOps.Snapshot(r.Context())
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		// "private, no-cache": a published change must show at once.
		respondWithETag(w, r, snap.ETag, "private, no-cache", snap)
	})
}

func handleTestingTools(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		md, err := d.Testing.Metadata(r.Context())
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, md)
	})
}
