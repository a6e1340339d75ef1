package auth

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// Limits are the attempt budgets of the routes that guess passwords or send
// mail. Reads such as get-session are never limited.
type Limits struct {
	LoginIP      ratelimit.Rule // sign-in and sign-up, per client IP
	LoginAccount ratelimit.Rule // sign-in and sign-up, per email address
	MailIP       ratelimit.Rule // password reset and verification mail, per client IP
	MailAccount  ratelimit.Rule // the same, per email address
}

// The actions that are limited; each counts separately, as better-auth
// keys its counters by path.
const (
	actionSignIn       = "sign-in"
	actionSignUp       = "sign-up"
	actionResetRequest = "request-password-reset"
	actionVerifyMail   = "send-verification-email"
)

// ipKey reduces an address to what one client controls: the address
// itself for IPv4, its /64 for IPv6, where one host easily owns a whole
// prefix.
func ipKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// Limiter counts attempts against rules, all or nothing, shared by every
// replica (store.RateLimits). When any check is over its limit it counts
// nothing and returns false with the wait.
type Limiter interface {
	Allow(ctx context.Context, now time.Time, checks ...ratelimit.Check) (bool, time.Duration, error)
}

// allow counts one attempt of action from client for email and answers
// RATE_LIMITED with the wait when the IP's or the account's budget is
// spent. A refused attempt is not counted. When the counters cannot be
// read the attempt is refused (the error says the database is
// unavailable): a limit that fails open is no limit under attack.
func (s *Service) allow(ctx context.Context, action string, realm account.Realm, client Client, email string, perIP, perAccount ratelimit.Rule) error {
	checks := []ratelimit.Check{{Key: action + "|ip|" + ipKey(client.IPAddress), Rule: perIP}}
	if email = account.NormalizeEmail(email); email != "" {
		checks = append(checks, ratelimit.Check{Key: action + "|account|" + string(realm) + "|" + email, Rule: perAccount})
	}
	ok, wait, err := s.limiter.Allow(ctx, s.now(), checks...)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", action, err)
	}
	if ok {
		return nil
	}
	e := platform.Errorf(platform.KindRateLimited, platform.CodeRateLimited, "Too many requests. Please try again later.")
	e.RetryAfter = max(wait, time.Second)
	return e
}

// hashingFor names the client and the account a password hash is made for,
// so the hasher admits at most a few at once from each.
func hashingFor(ctx context.Context, realm account.Realm, client Client, email string) context.Context {
	return account.WithClientKeys(ctx, "ip|"+ipKey(client.IPAddress), "account|"+string(realm)+"|"+account.NormalizeEmail(email))
}
