package apitest

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp/totp"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

// CreateAdminWithRole creates an administrator with the given role (as
// `platformctl admin create --role` does) and returns it signed in to the
// admin realm.
func (s *Server) CreateAdminWithRole(tb testing.TB, role string) *Account {
	tb.Helper()
	ctx := tb.Context()
	n := accountSeq.Add(1)
	in := account.NewUser{
		Email:    fmt.Sprintf("%s%d-%s@example.com", role, n, uuid.NewString()[:8]),
		Name:     fmt.Sprintf("%s %d", role, n),
		Password: DefaultPassword,
		Role:     role,
	}
	u, err := s.App.Accounts.Create(ctx, account.RealmAdmin, in)
	if err != nil {
		tb.Fatalf("create %s administrator: %v", role, err)
	}
	p, err := s.App.Auth.OpenSession(ctx, u, true, auth.Client{UserAgent: "apitest"})
	if err != nil {
		tb.Fatalf("open admin session: %v", err)
	}
	c := s.Client(tb)
	c.AddSession(p)
	return &Account{User: u, Password: in.Password, Token: p.Token, Client: c}
}

// EnrolTOTP gives a an authenticator app, enrolled and confirmed as a
// client would (enable, then a first code computed from the otpauth URI),
// and returns the enrolment with its backup codes. The step of that first
// code is spent: a test signing in right after uses a backup code.
func (s *Server) EnrolTOTP(tb testing.TB, a *Account) *auth.Enrolment {
	tb.Helper()
	ctx, client := tb.Context(), auth.Client{IPAddress: "192.0.2.9", UserAgent: "apitest"}
	p, err := s.App.Auth.SignIn(ctx, a.User.Realm, a.User.Email, a.Password, false, client)
	if err != nil {
		tb.Fatal(err)
	}
	en, err := s.App.Auth.EnableTOTP(ctx, p, client, a.Password, "")
	if err != nil {
		tb.Fatal(err)
	}
	uri, err := url.Parse(en.TOTPURI)
	if err != nil {
		tb.Fatal(err)
	}
	code, err := totp.GenerateCode(uri.Query().Get("secret"), time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.App.Auth.VerifySecondFactor(ctx, p, client, auth.SecondFactorProof{Code: code}); err != nil {
		tb.Fatalf("confirm the enrolment: %v", err)
	}
	return en
}
