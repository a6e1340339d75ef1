package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
)

// adminRoute is one route of the administrator plane and the permission
// it needs. The list is the role matrix: every route is registered behind
// requirePermission with its permission, and the matrix test walks it.
type adminRoute struct {
	pattern string
	perm    role.Permission
	handler http.Handler
}

// adminRoutes is the administrator plane under /api/admin. Each handler
// translates one request into one call of the admin service, as the
// signed-in administrator (admin.ActorOf).
func adminRoutes(d Deps) []adminRoute {
	return slices.Concat(adminUserRoutes(d), adminLookupRoutes(d), adminAccountRoutes(d), adminOpsRoutes(d))
}

// adminUserRoutes are the routes about the administrator and the players.
func adminUserRoutes(d Deps) []adminRoute {
	return []adminRoute{
		{"GET /api/admin/me", role.ConsoleRead, adminGet(d, func(r *http.Request, _ string) (any, error) {
			return admin.Me(principalFrom(r).User), nil
		})},
		{"GET /api/admin/roles", role.ConsoleRead, adminGet(d, func(*http.Request, string) (any, error) {
			return admin.Roles(), nil
		})},
		{"GET /api/admin/users", role.PlayersRead, adminGet(d, func(r *http.Request, _ string) (any, error) {
			limit, err := intParam(r, "limit")
			if err != nil {
				return nil, err
			}
			q := r.URL.Query()
			return d.Admin.SearchUsers(r.Context(), admin.UserQuery{Query: q.Get("query"), Cursor: q.Get("cursor"), Limit: limit})
		})},
		{"GET /api/admin/users/{id}", role.PlayersRead, adminGet(d, func(r *http.Request, actor string) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Admin.User(r.Context(), actor, id)
		})},
		{"POST /api/admin/users/{id}/sessions/revoke", role.SessionsWrite, adminPost(d, decode[admin.RevokeInput], func(r *http.Request, actor string, in admin.RevokeInput) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Admin.RevokeSessions(r.Context(), actor, id.String(), in)
		})},
		{"POST /api/admin/users/{id}/tokens", role.TokensIssue, adminPost(d, decode[admin.IssueRequest], func(r *http.Request, actor string, in admin.IssueRequest) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Admin.IssueToken(r.Context(), in.Input(actor, id.String()))
		})},
	}
}

// adminLookupRoutes answer the questions support asks before acting:
// where an account stands, and what a token a player pasted is for.
func adminLookupRoutes(d Deps) []adminRoute {
	return []adminRoute{
		{"GET /api/admin/users/{id}/status", role.PlayersRead, adminGet(d, func(r *http.Request, _ string) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Lifecycle.Show(r.Context(), account.RealmPlayer, id.String())
		})},
		// The token travels in the body, never in the URL, so it stays out
		// of access logs and proxies.
		{"POST /api/admin/tokens/inspect", role.TokensIssue, adminPost(d, decode[tokenRequest], func(r *http.Request, actor string, in tokenRequest) (any, error) {
			return d.Profile.Inspect(r.Context(), actor, in.Token)
		})},
	}
}

// adminAccountRoutes are the routes that change a player's account:
// suspension, second factors, export and deletion.
func adminAccountRoutes(d Deps) []adminRoute {
	return []adminRoute{
		{"POST /api/admin/users/{id}/suspend", role.SessionsWrite, adminPost(d, decode[suspendRequest], func(r *http.Request, actor string, in suspendRequest) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Lifecycle.Suspend(r.Context(), actor, account.RealmPlayer, id.String(), in.Reason, in.until())
		})},
		{"POST /api/admin/users/{id}/unsuspend", role.SessionsWrite, adminPost(d, decode[reasonRequest], func(r *http.Request, actor string, in reasonRequest) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			lifted, err := d.Lifecycle.Unsuspend(r.Context(), actor, account.RealmPlayer, id.String(), in.Reason)
			return unsuspended{Lifted: lifted}, err
		})},
		{"POST /api/admin/users/{id}/delete", role.AdminsWrite, adminPost(d, decode[reasonRequest], func(r *http.Request, actor string, in reasonRequest) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Lifecycle.DeleteBySupport(r.Context(), actor, account.RealmPlayer, id.String(), in.Reason)
		})},
		{"GET /api/admin/users/{id}/export", role.PlayersRead, adminGet(d, func(r *http.Request, actor string) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Lifecycle.ExportBySupport(r.Context(), actor, account.RealmPlayer, id.String())
		})},
		{"POST /api/admin/users/{id}/factors/reset", role.SessionsWrite, adminPost(d, decode[reasonRequest], func(r *http.Request, actor string, in reasonRequest) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Auth.SupportResetFactors(r.Context(), actor, account.RealmPlayer, id.String(), in.Reason)
		})},
	}
}

// adminOpsRoutes are the routes of the audit trail, the mail outbox,
// live-ops and the administrators.
func adminOpsRoutes(d Deps) []adminRoute {
	return []adminRoute{
		{"GET /api/admin/audit", role.AuditRead, adminGet(d, func(r *http.Request, _ string) (any, error) {
			q, err := auditQuery(r)
			if err != nil {
				return nil, err
			}
			return d.Admin.Audit(r.Context(), q)
		})},
		{"GET /api/admin/mail", role.PlayersRead, adminGet(d, func(r *http.Request, actor string) (any, error) {
			limit, err := intParam(r, "limit")
			if err != nil {
				return nil, err
			}
			return d.Admin.Mail(r.Context(), actor, mail.Filter{Status: mail.Status(r.URL.Query().Get("status")), Limit: limit})
		})},
		{"GET /api/admin/mail/{id}", role.PlayersRead, adminGet(d, func(r *http.Request, actor string) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Admin.MailShow(r.Context(), actor, id)
		})},
		{"POST /api/admin/mail/{id}/retry", role.TokensIssue, adminPost(d, decode[reasonRequest], func(r *http.Request, actor string, in reasonRequest) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Admin.MailRetry(r.Context(), actor, in.Reason, id)
		})},
		{"GET /api/admin/liveops", role.LiveOpsRead, adminGet(d, func(r *http.Request, _ string) (any, error) {
			return d.Admin.LiveOps(r.Context())
		})},
		{"POST /api/admin/liveops", role.LiveOpsWrite, adminPost(d, decode[admin.PublishInput], func(r *http.Request, actor string, in admin.PublishInput) (any, error) {
			return d.Admin.Publish(r.Context(), actor, in)
		})},
		{"POST /api/admin/liveops/seeds", role.LiveOpsWrite, adminPost(d, decode[admin.SeedInput], func(r *http.Request, actor string, in admin.SeedInput) (any, error) {
			return d.Admin.SetSeed(r.Context(), actor, in)
		})},
		{"GET /api/admin/admins", role.AdminsWrite, adminGet(d, func(r *http.Request, _ string) (any, error) {
			return d.Admin.Admins(r.Context())
		})},
		{"POST /api/admin/admins", role.AdminsWrite, adminPost(d, decode[admin.NewAdminInput], func(r *http.Request, actor string, in admin.NewAdminInput) (any, error) {
			return d.Admin.CreateAdmin(r.Context(), actor, in)
		})},
		{"POST /api/admin/admins/{id}/role", role.AdminsWrite, adminPost(d, decode[admin.RoleInput], func(r *http.Request, actor string, in admin.RoleInput) (any, error) {
			id, err := uuidParam(r, "id")
			if err != nil {
				return nil, err
			}
			return d.Admin.SetRole(r.Context(), actor, role.AdminRef{ID: id}, in)
		})},
	}
}

// addAdminRoutes registers the administrator plane.
func addAdminRoutes(mux *routeTable, d Deps) {
	for _, rt := range adminRoutes(d) {
		mux.Handle(rt.pattern, requirePermission(d, rt.perm, rt.handler))
	}
}

// adminGet answers a read of the administrator plane. The answers name
// players, so no cache keeps them.
func adminGet(d Deps, call func(r *http.Request, actor string) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := call(r, admin.ActorOf(principalFrom(r).User))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, res)
	})
}

// adminPost answers a change of the administrator plane with a JSON body
// T, read by read (decode[T], named at each route so the body fuzzer
// finds every type).
func adminPost[T any](d Deps, read func(*http.Request) (T, error), call func(r *http.Request, actor string, in T) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := read(r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		res, err := call(r, admin.ActorOf(principalFrom(r).User), in)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, res)
	})
}

type reasonRequest struct {
	Reason string `json:"reason"`
}

func auditQuery(r *http.Request) (admin.AuditQuery, error) {
	q := r.URL.Query()
	out := admin.AuditQuery{User: q.Get("user"), Action: q.Get("action"), Actor: q.Get("actor"), Cursor: q.Get("cursor")}
	var err error
	if out.Limit, err = intParam(r, "limit"); err != nil {
		return out, err
	}
	if s := q.Get("since"); s != "" {
		if out.Since, err = time.Parse(time.RFC3339, s); err != nil {
			return out, platform.Invalid("since", "must be an RFC 3339 time such as 2026-11-21T09:00:00Z")
		}
	}
	return out, nil
}

// intParam reads an optional integer query parameter; 0 when absent.
func intParam(r *http.Request, name string) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, platform.Invalid(name, "must be an integer")
	}
	return n, nil
}

// uuidParam reads a path wildcard that must be an id.
func uuidParam(r *http.Request, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue(name))
	if err != nil {
		return uuid.Nil, platform.Invalid(name, "must be a UUID")
	}
	return id, nil
}

// suspendRequest is the body of a suspension: why, and until when (none:
// until support lifts it).
type suspendRequest struct {
	Reason string     `json:"reason"`
	Until  *time.Time `json:"until"`
}

func (r suspendRequest) until() time.Time {
	if r.Until == nil {
		return time.Time{}
	}
	return *r.Until
}

// unsuspended answers an unsuspension: whether a suspension was lifted.
type unsuspended struct {
	Lifted bool `json:"lifted"`
}
