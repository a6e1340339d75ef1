package httpapi

import (
	"errors"
	"net/http"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// The second factor speaks better-auth's twoFactor plugin wire, so its
// twoFactorClient works unchanged.

type passwordRequest struct {
	Password string `json:"password"`
	Issuer   string `json:"issuer"`
	Method   string `json:"method"`
}

// Validate requires the password, which these routes take in place of a
// fresh session.
func (in *passwordRequest) Validate() error {
	if in.Password == "" {
		return platform.Invalid("password", "is required")
	}
	if in.Method != "" && in.Method != auth.MethodTOTP {
		return platform.Errorf(platform.KindInvalid, auth.CodeOTPNotConfigured, "OTP not configured")
	}
	return nil
}

type codeRequest struct {
	Code           string `json:"code"`
	TrustDevice    bool   `json:"trustDevice"`
	DisableSession bool   `json:"disableSession"`
}

// Validate requires a code of sensible length.
func (in *codeRequest) Validate() error {
	if in.Code == "" || len(in.Code) > 64 {
		return platform.Invalid("code", "is required and at most 64 characters")
	}
	return nil
}

type enableResponse struct {
	Method      string   `json:"method"`
	TOTPURI     string   `json:"totpURI"`
	BackupCodes []string `json:"backupCodes"`
}

type backupCodesResponse struct {
	Status      bool     `json:"status"`
	BackupCodes []string `json:"backupCodes"`
}

type twoFactorRedirect struct {
	TwoFactorRedirect bool     `json:"twoFactorRedirect"`
	TwoFactorMethods  []string `json:"twoFactorMethods"`
}

// respondSecondFactor answers a first factor that needs a second one: no
// session cookie, the signed two_factor cookie, and twoFactorRedirect.
func respondSecondFactor(w http.ResponseWriter, d Deps, req *auth.SecondFactorRequired) {
	setCookies(w, d.Auth.Cookies().ClearCookies(req.Realm))
	http.SetCookie(w, d.Auth.Cookies().TwoFactorCookie(req.Realm, req.Token))
	respond(w, http.StatusOK, twoFactorRedirect{TwoFactorRedirect: true, TwoFactorMethods: req.Methods})
}

func handleEnableTwoFactor(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passwordRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		en, err := d.Auth.EnableTOTP(r.Context(), principalFrom(r), d.client(r), in.Password, in.Issuer)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, enableResponse{Method: auth.MethodTOTP, TOTPURI: en.TOTPURI, BackupCodes: en.BackupCodes})
	})
}

func handleGetTOTPURI(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passwordRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		uri, err := d.Auth.TOTPURI(r.Context(), principalFrom(r), d.client(r), in.Password)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, map[string]string{"totpURI": uri})
	})
}

func handleGenerateBackupCodes(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passwordRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		codes, err := d.Auth.GenerateBackupCodes(r.Context(), principalFrom(r), d.client(r), in.Password)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		respond(w, http.StatusOK, backupCodesResponse{Status: true, BackupCodes: codes})
	})
}

func handleDisableTwoFactor(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[passwordRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p, err := d.Auth.DisableTOTP(r.Context(), principalFrom(r), d.client(r), in.Password)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().SessionCookies(p.Realm, p.Token, p.Session.Remember))
		respond(w, http.StatusOK, statusResponse{Status: true})
	})
}

// handleVerifySecondFactor checks a TOTP or backup code: with a session it
// confirms enrolment or re-authenticates, without one it completes the
// sign-in the two_factor cookie names. Either way a new session token.
func handleVerifySecondFactor(d Deps, realm account.Realm, backup bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[codeRequest](r)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		p, err := d.Auth.SessionFromRequest(r.Context(), realm, r)
		if errors.Is(err, auth.ErrUnauthenticated) {
			p, err = nil, nil
		}
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		proof := auth.SecondFactorProof{Code: in.Code, Backup: backup}
		if p == nil {
			proof.ChallengeToken = d.Auth.Cookies().TwoFactorToken(realm, r)
		}
		next, err := d.Auth.VerifySecondFactor(r.Context(), p, d.client(r), proof)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		setCookies(w, d.Auth.Cookies().SessionCookies(realm, next.Token, next.Session.Remember))
		http.SetCookie(w, d.Auth.Cookies().ClearTwoFactorCookie(realm))
		if in.TrustDevice {
			ck, err := d.Auth.TrustDeviceCookie(r.Context(), next)
			if err != nil {
				respondErr(w, r, d.Log, err)
				return
			}
			if ck != nil {
				http.SetCookie(w, ck)
			}
		}
		respond(w, http.StatusOK, tokenUserResponse{Token: next.Token, User: next.User})
	})
}

// addTwoFactorRoutes lists the second-factor routes of one mount.
func addTwoFactorRoutes(mux *routeTable, d Deps, mount string, realm account.Realm) {
	mux.Handle("POST "+mount+"/two-factor/enable", requireSession(d, realm, handleEnableTwoFactor(d)))
	mux.Handle("POST "+mount+"/two-factor/get-totp-uri", requireSession(d, realm, handleGetTOTPURI(d)))
	mux.Handle("POST "+mount+"/two-factor/generate-backup-codes", requireSession(d, realm, handleGenerateBackupCodes(d)))
	mux.Handle("POST "+mount+"/two-factor/disable", requireSession(d, realm, handleDisableTwoFactor(d)))
	mux.Handle("POST "+mount+"/two-factor/verify-totp", checkOrigin(d, handleVerifySecondFactor(d, realm, false)))
	mux.Handle("POST "+mount+"/two-factor/verify-backup-code", checkOrigin(d, handleVerifySecondFactor(d, realm, true)))
}
