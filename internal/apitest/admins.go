package apitest

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

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
