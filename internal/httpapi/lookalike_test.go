package httpapi_test

import (
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
)

// An address spelt with a look-alike full stop or full-width letters is
// the ASCII address, not a second account for it; names that reorder or
// hide text are refused.
func TestSignUpRefusesLookAlikesAndInvisibleText(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "off"))
	c := srv.Client(t)
	if r := c.Do("POST", "/api/auth/player/sign-up/email", signUpBody("ada@example.com", "ada")); r.Status != 200 {
		t.Fatalf("sign-up = %d %s", r.Status, r.Body)
	}
	for i, email := range []string{"ada@example\u3002com", "ada@example\uff0ecom", "ada@example\uff61com", "ada@\uff45xample.com"} {
		r := c.Do("POST", "/api/auth/player/sign-up/email", signUpBody(email, "ada"+string(rune('a'+i))))
		if r.Status != 422 || r.Code() != "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL" {
			t.Errorf("sign-up as %q = %d %s, want 422 USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", email, r.Status, r.Body)
		}
	}
	for _, name := range []string{"Ada \u202eelpmaxe.live//:sptth ta kcolnu", "Ada\u200b", "\u2066Ada\u2069"} {
		body := signUpBody("fresh@example.com", "fresh")
		body["name"] = name
		if r := c.Do("POST", "/api/auth/player/sign-up/email", body); r.Status != 400 || r.Code() != "VALIDATION_ERROR" {
			t.Errorf("sign-up named %q = %d %s, want 400 VALIDATION_ERROR", name, r.Status, r.Body)
		}
	}
}
