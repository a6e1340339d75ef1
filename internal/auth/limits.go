package auth

import (
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

// allow counts one attempt of action from client for email and answers
// RATE_LIMITED with the wait when the IP's or the account's budget is
// spent. A refused attempt is not counted.
func (s *Service) allow(action string, realm account.Realm, client Client, email string, perIP, perAccount ratelimit.Rule) error {
	checks := []ratelimit.Check{{Key: action + "|ip|" + ipKey(client.IPAddress), Rule: perIP}}
	if email = account.NormalizeEmail(email); email != "" {
		checks = append(checks, ratelimit.Check{Key: action + "|account|" + string(realm) + "|" + email, Rule: perAccount})
	}
	ok, wait := s.limiter.Allow(checks...)
	if ok {
		return nil
	}
	e := platform.Errorf(platform.KindRateLimited, platform.CodeRateLimited, "Too many requests. Please try again later.")
	e.RetryAfter = max(wait, time.Second)
	return e
}
