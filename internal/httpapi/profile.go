package httpapi

import (
	"net/http"

	"github.com/towerdefence/platformctl/internal/profile"
)

type profileChangeRequest struct {
	Name        string `json:"name"`
	Nickname    string `json:"nickname"`
	CallbackURL string `json:"callbackURL"`
}

type emailChangeRequest struct {
	NewEmail    string `json:"newEmail"`
	CallbackURL string `json:"callbackURL"`
}

type passwordChangeRequest struct {
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
	CallbackURL     string `json:"callbackURL"`
}

type confirmChangeRequest struct {
	Token string `json:"token"`
}

// changeRequested is the answer of every request-* route: the change is
// pending and its confirmation mail is in the outbox.
var changeRequested = map[string]bool{"status": true}

func handleRequestProfileChange(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[profileChangeRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		err = d.Profile.RequestProfileChange(r.Context(), principalFrom(r).User,
			profile.ProfileChangeInput{Name: in.Name, Nickname: in.Nickname, CallbackURL: in.CallbackURL})
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		noStore(w)
		respond(w, http.StatusOK, changeRequested)
	})
}

func handleRequestEmailChange(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[emailChangeRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		err = d.Profile.RequestEmailChange(r.Context(), principalFrom(r).User,
			profile.EmailChangeInput{NewEmail: in.NewEmail, CallbackURL: in.CallbackURL})
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		noStore(w)
		respond(w, http.StatusOK, changeRequested)
	})
}

func handleRequestPasswordChange(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passwordChangeRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		err = d.Profile.RequestPasswordChange(r.Context(), principalFrom(r).User,
			profile.PasswordChangeInput{CurrentPassword: in.CurrentPassword, NewPassword: in.NewPassword, CallbackURL: in.CallbackURL})
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		noStore(w)
		respond(w, http.StatusOK, changeRequested)
	})
}

// handleConfirmChange is anonymous: the emailed token is the credential.
func handleConfirmChange(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[confirmChangeRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		res, err := d.Profile.Confirm(r.Context(), in.Token)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		noStore(w)
		respond(w, http.StatusOK, res)
	})
}

// noStore keeps answers about an account out of shared caches.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
}
