package auth_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// occupy holds every hashing slot of h until the returned release is
// called: each slot's hash waits in its precheck.
func occupy(t *testing.T, h *account.Hasher) (release func()) {
	t.Helper()
	hold := make(chan struct{})
	var entered, done sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		entered.Add(1)
		done.Go(func() {
			_, err := h.HashIf(t.Context(), "occupied", func(context.Context) error {
				entered.Done()
				<-hold
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	entered.Wait()
	return func() {
		close(hold)
		done.Wait()
	}
}

// A sign-in refused for want of a hashing slot (503) spends none of the
// caller's attempts: once the flood that filled the slots has passed, the
// client still has its whole budget.
func TestSignInRefusedBeforeItsHashSpendsNoAttempts(t *testing.T) {
	hasher := account.NewHasher(cheapHash, account.Admission{Wait: 20 * time.Millisecond})
	limits := auth.Limits{LoginIP: ratelimit.Rule{Limit: 100, Window: time.Hour}, LoginAccount: ratelimit.Rule{Limit: 3, Window: time.Hour}}
	f := newFixtureWithHasher(t, limits, hasher)
	f.signUp(t, "retry@example.com", "retrier")
	client := auth.Client{IPAddress: "192.0.2.7", UserAgent: "test"}
	signIn := func(password string) error {
		_, err := f.svc.SignIn(t.Context(), account.RealmPlayer, "retry@example.com", password, false, client)
		return err
	}

	release := occupy(t, hasher)
	for i := range 7 {
		if err := signIn("wrong password"); !errors.Is(err, account.ErrHashBusy) {
			release()
			t.Fatalf("sign-in %d with every slot busy = %v, want the hasher's 503", i+1, err)
		}
	}
	release()
	for i := range 3 {
		if err := signIn("wrong password"); !errors.Is(err, account.ErrInvalidCredentials) {
			t.Fatalf("attempt %d of 3 after the flood = %v, want INVALID_EMAIL_OR_PASSWORD", i+1, err)
		}
	}
	if err := signIn("correct horse"); !isRateLimited(err) {
		t.Fatalf("4th counted attempt = %v, want RATE_LIMITED", err)
	}
}

func isRateLimited(err error) bool {
	pe, ok := platform.As(err)
	return ok && pe.Code == platform.CodeRateLimited
}
