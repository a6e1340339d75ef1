package auth

import (
	"context"
	"errors"
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
	// Refund takes back one attempt that Allow counted.
	Refund(ctx context.Context, checks ...ratelimit.Check) error
}

// allow counts one attempt of action from client for email and answers
// RATE_LIMITED with the wait when the IP's or the account's budget is
// spent. A refused attempt is not counted. When the counters cannot be
// read the attempt is refused (the error says the database is
// unavailable): a limit that fails open is no limit under attack.
// It returns the checks it counted, for refundUnhashed.
func (s *Service) allow(ctx context.Context, action string, realm account.Realm, client Client, email string, perIP, perAccount ratelimit.Rule) ([]ratelimit.Check, error) {
	checks := []ratelimit.Check{{Key: action + "|ip|" + ipKey(client.IPAddress), Rule: perIP}}
	if email = account.NormalizeEmail(email); email != "" {
		checks = append(checks, ratelimit.Check{Key: action + "|account|" + string(realm) + "|" + email, Rule: perAccount})
	}
	ok, wait, err := s.limiter.Allow(ctx, s.now(), checks...)
	if err != nil {
		return nil, fmt.Errorf("rate limit %s: %w", action, err)
	}
	if ok {
		return checks, nil
	}
	e := platform.Errorf(platform.KindRateLimited, platform.CodeRateLimited, "Too many requests. Please try again later.")
	e.RetryAfter = max(wait, time.Second)
	return nil, e
}

// refundUnhashed gives back the attempt counted against checks when err
// refused the request before its password was hashed (the hasher was
// busy): a client retrying through a sign-in flood it has no part in
// must not find its budget spent once the flood has passed. It returns
// err, joined with the refund's error should that fail.
func (s *Service) refundUnhashed(ctx context.Context, err error, checks []ratelimit.Check) error {
	if !account.RefusedBeforeHash(err) {
		return err
	}
	if rerr := s.limiter.Refund(context.WithoutCancel(ctx), checks...); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// hashingFor names the client and the account a password hash is made for,
// so the hasher admits at most a few at once from each.
func hashingFor(ctx context.Context, realm account.Realm, client Client, email string) context.Context {
	return account.WithClientKeys(ctx, "ip|"+ipKey(client.IPAddress), "account|"+string(realm)+"|"+account.NormalizeEmail(email))
}
