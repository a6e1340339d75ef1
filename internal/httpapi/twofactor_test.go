package httpapi_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mailtest"
)

// totpCode computes an authenticator app's code from the otpauth:// URI.
func totpCode(t *testing.T, uri string, at time.Time) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCodeCustom(u.Query().Get("secret"), at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestTwoFactorWire(t *testing.T) {
	t.Parallel()
	srv, smtp := mailServer(t)
	p := srv.SignUpPlayer(t)
	c := p.Client
	const mount = "/api/auth/player"

	if r := c.Do("POST", mount+"/two-factor/enable", map[string]any{"password": "wrong password"}); r.Status != 400 || r.Code() != "INVALID_PASSWORD" {
		t.Fatalf("enable with a wrong password = %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", mount+"/two-factor/enable", map[string]any{}); r.Status != 400 {
		t.Fatalf("enable without a password = %d %s", r.Status, r.Body)
	}
	r := c.Do("POST", mount+"/two-factor/enable", map[string]any{"password": p.Password})
	var en struct {
		TOTPURI     string   `json:"totpURI"`
		BackupCodes []string `json:"backupCodes"`
	}
	r.Decode(t, &en)
	if r.Status != 200 || len(en.BackupCodes) != 10 {
		t.Fatalf("enable = %d %s", r.Status, r.Body)
	}
	now := time.Now()
	code := totpCode(t, en.TOTPURI, now)
	if r := c.Do("POST", mount+"/two-factor/verify-totp", map[string]any{"code": code}); r.Status != 200 {
		t.Fatalf("confirm enrolment = %d %s", r.Status, r.Body)
	}
	smtp.WaitFor(t, 10*time.Second, subject("sign-in factor"))
	if r := c.Do("GET", mount+"/get-session", nil); r.Status != 200 || isNull(r.Body) {
		t.Fatalf("the rotated session = %d %s", r.Status, r.Body)
	}

	anon := srv.Client(t)
	r = anon.Do("POST", mount+"/sign-in/email", map[string]any{"email": p.User.Email, "password": p.Password})
	var redirect struct {
		TwoFactorRedirect bool     `json:"twoFactorRedirect"`
		TwoFactorMethods  []string `json:"twoFactorMethods"`
	}
	r.Decode(t, &redirect)
	if r.Status != 200 || !redirect.TwoFactorRedirect || len(redirect.TwoFactorMethods) != 1 {
		t.Fatalf("sign-in with 2FA = %d %s", r.Status, r.Body)
	}
	if r := anon.Do("GET", mount+"/get-session", nil); !isNull(r.Body) {
		t.Fatalf("a session before the second factor: %s", r.Body)
	}
	if r := anon.Do("POST", mount+"/two-factor/verify-totp", map[string]any{"code": code}); r.Status != 401 || r.Code() != "INVALID_CODE" {
		t.Fatalf("the same step's code again = %d %s", r.Status, r.Body)
	}
	for _, bad := range []any{map[string]any{"code": ""}, map[string]any{"code": 123456}, "[1,2]", map[string]any{"code": string(make([]byte, 100))}} {
		if r := anon.Do("POST", mount+"/two-factor/verify-totp", bad); r.Status != 400 {
			t.Fatalf("verify-totp %v = %d %s", bad, r.Status, r.Body)
		}
	}
	next := totpCode(t, en.TOTPURI, now.Add(30*time.Second))
	if r := anon.Do("POST", mount+"/two-factor/verify-totp", map[string]any{"code": next, "trustDevice": true}); r.Status != 200 {
		t.Fatalf("the next step's code = %d %s", r.Status, r.Body)
	}
	if r := anon.Do("GET", mount+"/get-session", nil); r.Status != 200 || isNull(r.Body) {
		t.Fatalf("no session after the second factor: %s", r.Body)
	}
	// The trusted browser signs in on the password alone; another does not.
	if r := anon.Do("POST", mount+"/sign-in/email", map[string]any{"email": p.User.Email, "password": p.Password}); r.Status != 200 || r.Code() != "" {
		t.Fatalf("trusted sign-in = %d %s", r.Status, r.Body)
	} else if _, asked := decodeMap(t, r)["twoFactorRedirect"]; asked {
		t.Fatalf("a trusted device was asked for the second factor: %s", r.Body)
	}

	other := srv.Client(t)
	if r := other.Do("POST", mount+"/two-factor/verify-backup-code", map[string]any{"code": en.BackupCodes[0]}); r.Status != 401 || r.Code() != "INVALID_TWO_FACTOR_COOKIE" {
		t.Fatalf("a backup code without a challenge = %d %s", r.Status, r.Body)
	}
	other.Do("POST", mount+"/sign-in/email", map[string]any{"email": p.User.Email, "password": p.Password})
	if r := other.Do("POST", mount+"/two-factor/verify-backup-code", map[string]any{"code": en.BackupCodes[0]}); r.Status != 200 {
		t.Fatalf("a backup code = %d %s", r.Status, r.Body)
	}
	r = c.Do("POST", mount+"/two-factor/generate-backup-codes", map[string]any{"password": p.Password})
	if r.Status != 200 || len(decodeMap(t, r)["backupCodes"].([]any)) != 10 {
		t.Fatalf("generate-backup-codes = %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", mount+"/two-factor/disable", map[string]any{"password": p.Password}); r.Status != 200 {
		t.Fatalf("disable = %d %s", r.Status, r.Body)
	}
	if r := srv.Client(t).Do("POST", mount+"/sign-in/email", map[string]any{"email": p.User.Email, "password": p.Password}); r.Status != 200 || decodeMap(t, r)["token"] == nil {
		t.Fatalf("sign-in after disable = %d %s", r.Status, r.Body)
	}
	assertNotLogged(t, srv, en.BackupCodes[1], code)
}

func isNull(body []byte) bool { return strings.TrimSpace(string(body)) == "null" }

func decodeMap(t *testing.T, r interface{ Decode(testing.TB, any) }) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// In production an administrator without a second factor is refused on
// every admin route with SECOND_FACTOR_REQUIRED, but may enrol one; once
// enrolled the routes answer.
func TestAdminsNeedSecondFactorInProduction(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t, mailtest.Options{})
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_ENV", "production"), apitest.WithEnv("PLATFORM_SMTP_URL", smtp.URL()))
	admin := srv.CreateAdmin(t)
	c := admin.Client
	for _, path := range []string{"/api/admin/bootstrap", "/api/liveops/admin-bootstrap"} {
		if r := c.Do("GET", path, nil); r.Status != 403 || r.Code() != "SECOND_FACTOR_REQUIRED" {
			t.Fatalf("%s without a second factor = %d %s", path, r.Status, r.Body)
		}
	}
	r := c.Do("POST", "/api/auth/admin/two-factor/enable", map[string]any{"password": admin.Password})
	var en struct {
		TOTPURI string `json:"totpURI"`
	}
	r.Decode(t, &en)
	if r.Status != 200 {
		t.Fatalf("enrolment = %d %s", r.Status, r.Body)
	}
	if r := c.Do("GET", "/api/admin/bootstrap", nil); r.Status != 403 {
		t.Fatalf("an unconfirmed enrolment opened the console: %d", r.Status)
	}
	if r := c.Do("POST", "/api/auth/admin/two-factor/verify-totp", map[string]any{"code": totpCode(t, en.TOTPURI, time.Now())}); r.Status != 200 {
		t.Fatalf("confirm = %d %s", r.Status, r.Body)
	}
	if r := c.Do("GET", "/api/admin/bootstrap", nil); r.Status != 200 {
		t.Fatalf("the console after enrolment = %d %s", r.Status, r.Body)
	}
}

// Malformed passkey requests get a 4xx in the error model, never a 5xx.
func TestPasskeyBadInput(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_PASSKEY_RP_ID", "localhost"), apitest.WithEnv("PLATFORM_PASSKEY_ORIGINS", "http://localhost:8080"))
	p := srv.SignUpPlayer(t)
	const mount = "/api/auth/player"
	if r := p.Client.Do("GET", mount+"/passkey/generate-register-options", nil); r.Status != 200 {
		t.Fatalf("register options = %d %s", r.Status, r.Body)
	}
	anon := srv.Client(t)
	if r := anon.Do("GET", mount+"/passkey/generate-authenticate-options", nil); r.Status != 200 {
		t.Fatalf("authenticate options = %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		c    *apitest.Client
		path string
		body any
		want int
	}{
		{p.Client, "/passkey/verify-registration", map[string]any{}, 400},
		{p.Client, "/passkey/verify-registration", map[string]any{"response": "x"}, 400},
		{p.Client, "/passkey/verify-registration", map[string]any{"response": map[string]any{"id": 1, "response": []int{1}}}, 400},
		{p.Client, "/passkey/verify-registration", `{"response":{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA"}}}`, 400},
		{anon, "/passkey/verify-authentication", map[string]any{"response": map[string]any{"id": "AAAA"}}, 400},
		{anon, "/passkey/verify-authentication", "[]", 400},
		{srv.Client(t), "/passkey/verify-authentication", map[string]any{"response": map[string]any{"id": "AAAA"}}, 400},
		{p.Client, "/passkey/delete-passkey", map[string]any{"id": "not-a-uuid"}, 400},
		{p.Client, "/passkey/update-passkey", map[string]any{"id": "00000000-0000-0000-0000-000000000000", "name": "x"}, 404},
		{anon, "/passkey/delete-passkey", map[string]any{"id": "00000000-0000-0000-0000-000000000000"}, 401},
	} {
		if r := tc.c.Do("POST", mount+tc.path, tc.body); r.Status != tc.want || r.Code() == "" {
			t.Errorf("%s %v = %d %s, want %d", tc.path, tc.body, r.Status, r.Body, tc.want)
		}
	}
	if r := p.Client.Do("GET", mount+"/passkey/list-user-passkeys", nil); r.Status != 200 || !strings.HasPrefix(string(r.Body), "[]") {
		t.Fatalf("list = %d %s", r.Status, r.Body)
	}
}
