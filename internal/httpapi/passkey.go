package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Passkeys speak @better-auth/passkey's wire, so its passkeyClient works
// unchanged: options are WebAuthn JSON for the browser, the ceremony rides
// on a signed cookie.

type passkeyResponseRequest struct {
	Response json.RawMessage `json:"response"`
	Name     string          `json:"name"`
}

// Validate requires the browser's response.
func (in *passkeyResponseRequest) Validate() error {
	if len(in.Response) == 0 || string(in.Response) == "null" {
		return platform.Invalid("response", "is required")
	}
	return nil
}

type passkeyIDRequest struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (in *passkeyIDRequest) passkeyID() (uuid.UUID, error) {
	id, err := uuid.Parse(in.ID)
	if err != nil {
		return uuid.Nil, platform.Invalid("id", "must be a passkey id")
	}
	return id, nil
}

// Validate requires the id.
func (in *passkeyIDRequest) Validate() error {
	_, err := in.passkeyID()
	return err
}

func handlePasskeyRegisterOptions(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, err := d.Auth.BeginPasskeyRegistration(r.Context(), principalFrom(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		http.SetCookie(w, d.Auth.Cookies().PasskeyCookie(realm, opts.Token))
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, opts.Options)
	})
}

func handlePasskeyVerifyRegistration(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passkeyResponseRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		pk, err := d.Auth.FinishPasskeyRegistration(r.Context(), principalFrom(r), d.Auth.Cookies().PasskeyToken(realm, r), in.Response, in.Name)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, pk)
	})
}

func handlePasskeyAuthenticateOptions(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, err := d.Auth.BeginPasskeySignIn(r.Context())
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		http.SetCookie(w, d.Auth.Cookies().PasskeyCookie(realm, opts.Token))
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, opts.Options)
	})
}

// handlePasskeyVerifyAuthentication signs in with a passkey, through the
// same gate as a password: an account with a second factor gets
// twoFactorRedirect instead of a session.
func handlePasskeyVerifyAuthentication(d Deps, realm account.Realm) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passkeyResponseRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p, err := d.Auth.FinishPasskeySignIn(r.Context(), realm, d.Auth.Cookies().PasskeyToken(realm, r), in.Response, d.client(r),
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
		respond(w, http.StatusOK, sessionResponse{Session: p.Session, User: p.User})
	})
}

func handleListPasskeys(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := d.Auth.ListPasskeys(r.Context(), principalFrom(r))
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, list)
	})
}

func handleUpdatePasskey(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passkeyIDRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		id, _ := in.passkeyID()
		pk, err := d.Auth.RenamePasskey(r.Context(), principalFrom(r), id, in.Name)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, map[string]any{"passkey": pk})
	})
}

func handleDeletePasskey(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passkeyIDRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		id, _ := in.passkeyID()
		if err := d.Auth.DeletePasskey(r.Context(), principalFrom(r), id); err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

// addPasskeyRoutes lists the passkey routes of one mount.
func addPasskeyRoutes(mux *routeTable, d Deps, mount string, realm account.Realm) {
	mux.Handle("GET "+mount+"/passkey/generate-register-options", requireSession(d, realm, handlePasskeyRegisterOptions(d, realm)))
	mux.Handle("POST "+mount+"/passkey/verify-registration", requireSession(d, realm, handlePasskeyVerifyRegistration(d, realm)))
	mux.Handle("GET "+mount+"/passkey/generate-authenticate-options", handlePasskeyAuthenticateOptions(d, realm))
	mux.Handle("POST "+mount+"/passkey/verify-authentication", checkOrigin(d, handlePasskeyVerifyAuthentication(d, realm)))
	mux.Handle("GET "+mount+"/passkey/list-user-passkeys", requireSession(d, realm, handleListPasskeys(d)))
	mux.Handle("POST "+mount+"/passkey/update-passkey", requireSession(d, realm, handleUpdatePasskey(d)))
	mux.Handle("POST "+mount+"/passkey/delete-passkey", requireSession(d, realm, handleDeletePasskey(d)))
}
