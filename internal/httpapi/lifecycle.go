package httpapi

import (
	"net/http"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
)

// handleDeleteUser is better-auth's POST /delete-user: with the password
// or a fresh session it deletes at once (or, with mail configured, mails
// a confirmation link); with a mailed token it deletes. Once the account
// is gone its cookies are cleared.
func handleDeleteUser(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[lifecycle.DeleteRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		res, err := d.Lifecycle.DeleteSelf(r.Context(), principalFrom(r), in)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		if res.Message == lifecycle.MessageDeleted {
			setCookies(w, d.Auth.Cookies().ClearCookies(realm))
		}
		respond(w, http.StatusOK, res)
	})
}

// handleDeleteAnonymousUser is the anonymous plugin's POST
// /delete-anonymous-user: a guest deletes itself and its cookies go.
func handleDeleteAnonymousUser(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.Lifecycle.DeleteGuest(r.Context(), principalFrom(r)); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().ClearCookies(account.RealmPlayer))
		respond(w, http.StatusOK, guestDeleted{Success: true})
	})
}

// guestDeleted answers /delete-anonymous-user, as the anonymous plugin.
type guestDeleted struct {
	Success bool `json:"success"`
}

// handleDeleteUserCallback is better-auth's GET /delete-user/callback,
// the mailed link: it needs the same account's session, deletes, and
// redirects to callbackURL (with ?error=CODE on a refusal) or answers
// JSON.
func handleDeleteUserCallback(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		callback := q.Get("callbackURL")
		if err := d.Auth.Origins().CheckCallback(callback, auth.CodeInvalidCallbackURL); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		err := d.confirmDeletion(r, realm, q.Get("token"))
		if err == nil {
			setCookies(w, d.Auth.Cookies().ClearCookies(realm))
		}
		if answered := redirectOutcome(w, r, d, callback, err); answered {
			return
		}
		respond(w, http.StatusOK, lifecycle.DeleteResult{Success: true, Message: lifecycle.MessageDeleted})
	})
}

func (d Deps) confirmDeletion(r *http.Request, realm account.Realm, token string) error {
	p, err := d.Auth.SessionFromRequest(r.Context(), realm, r)
	if err != nil {
		return err
	}
	return d.Lifecycle.ConfirmDeletion(r.Context(), p, token)
}

// handleExport answers everything held about the signed-in player; it
// needs a fresh session.
func handleExport(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := d.Lifecycle.ExportOf(r.Context(), principalFrom(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Content-Disposition", `attachment; filename="player-export.json"`)
		respond(w, http.StatusOK, e)
	})
}
