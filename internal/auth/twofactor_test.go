package auth_test

import (
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/secretbox"
)

func testKeyring(t testing.TB) *secretbox.Keyring {
	k, err := secretbox.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// codeAt computes the authenticator app's code from the otpauth:// URI.
func codeAt(t *testing.T, uri string, at time.Time) string { return codeAtB(t, uri, at) }

func codeAtB(t testing.TB, uri string, at time.Time) string {
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

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if pe, ok := platform.As(err); !ok || pe.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
}

// enrol signs ada up and completes a TOTP enrolment; it returns the
// principal after enrolment, the URI and the backup codes.
func (f *fixture) enrol(t *testing.T) (*auth.Principal, *auth.Enrolment) {
	t.Helper()
	ctx := t.Context()
	p := f.signUp(t, "ada@example.com", "ada")
	if _, err := f.svc.EnableTOTP(ctx, p, auth.Client{}, "wrong horse", ""); !errors.Is(err, account.ErrInvalidPassword) {
		t.Fatalf("enable with a wrong password: %v", err)
	}
	en, err := f.svc.EnableTOTP(ctx, p, auth.Client{}, "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(en.BackupCodes) != 10 || len(en.BackupCodes[0]) != 27 {
		t.Fatalf("backup codes %q", en.BackupCodes)
	}
	// Not enrolled until the first code: a sign-in still opens a session.
	if _, err := f.svc.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{}); err != nil {
		t.Fatalf("sign-in before the first code: %v", err)
	}
	next, err := f.svc.VerifySecondFactor(ctx, p, auth.Client{}, auth.SecondFactorProof{Code: codeAt(t, en.TOTPURI, f.clock.Now())})
	if err != nil {
		t.Fatal(err)
	}
	if next.Token == p.Token {
		t.Fatal("confirming the factor kept the session token")
	}
	if _, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("the old token still works: %v", err)
	}
	return next, en
}

// challenge signs ada in with the password and returns the challenge.
func (f *fixture) challenge(t *testing.T) *auth.SecondFactorRequired {
	t.Helper()
	_, err := f.svc.SignIn(t.Context(), account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{})
	var req *auth.SecondFactorRequired
	if !errors.As(err, &req) || len(req.Methods) != 1 || req.Methods[0] != auth.MethodTOTP {
		t.Fatalf("sign-in with 2FA = %v, want a second-factor challenge", err)
	}
	return req
}

func TestTOTPSignInAndReplay(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	_, en := f.enrol(t)
	f.clock.Advance(30 * time.Second)
	code := codeAt(t, en.TOTPURI, f.clock.Now())
	ch := f.challenge(t)
	p, err := f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: code, ChallengeToken: ch.Token})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token); err != nil {
		t.Fatalf("the session after the second factor: %v", err)
	}
	// The challenge is spent, and the same step's code is refused even on
	// a new challenge inside its window.
	_, err = f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: code, ChallengeToken: ch.Token})
	wantCode(t, err, auth.CodeInvalidTwoFactorCookie)
	ch = f.challenge(t)
	_, err = f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: code, ChallengeToken: ch.Token})
	wantCode(t, err, auth.CodeInvalidCode)
	f.clock.Advance(30 * time.Second)
	if _, err := f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: codeAt(t, en.TOTPURI, f.clock.Now()), ChallengeToken: ch.Token}); err != nil {
		t.Fatalf("the next step's code: %v", err)
	}
}

func TestChallengeAttemptsAndLockout(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	_, en := f.enrol(t)
	ch := f.challenge(t)
	for range 5 {
		_, err := f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: "000000", ChallengeToken: ch.Token})
		wantCode(t, err, auth.CodeInvalidCode)
	}
	_, err := f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: "000000", ChallengeToken: ch.Token})
	wantCode(t, err, auth.CodeTooManyAttempts)
	_, err = f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: "000000", ChallengeToken: ch.Token})
	wantCode(t, err, auth.CodeInvalidTwoFactorCookie)
	// Five more failures on a second challenge lock the account: even the
	// right code is refused until the lockout ends.
	ch = f.challenge(t)
	for range 5 {
		_, err := f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: "abcdef-abcdef-abcdef-abcdef", Backup: true, ChallengeToken: ch.Token})
		wantCode(t, err, auth.CodeInvalidBackupCode)
	}
	ch = f.challenge(t)
	f.clock.Advance(30 * time.Second)
	good := auth.SecondFactorProof{Code: codeAt(t, en.TOTPURI, f.clock.Now()), ChallengeToken: ch.Token}
	_, err = f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, good)
	wantCode(t, err, auth.CodeAccountLocked)
	f.clock.Advance(15 * time.Minute)
	good.Code = codeAt(t, en.TOTPURI, f.clock.Now())
	ch = f.challenge(t)
	good.ChallengeToken = ch.Token
	if _, err := f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, good); err != nil {
		t.Fatalf("after the lockout: %v", err)
	}
}

func TestBackupCodeSingleUseUnderConcurrency(t *testing.T) {
	f := newFixture(t)
	p, en := f.enrol(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = f.svc.VerifySecondFactor(t.Context(), p, auth.Client{}, auth.SecondFactorProof{Code: en.BackupCodes[3], Backup: true})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if pe, isPE := platform.As(err); !isPE || (pe.Code != auth.CodeInvalidBackupCode && pe.Code != auth.CodeAccountLocked) {
			// Ten losers are ten failures, which lock the factor.
			t.Fatalf("a losing use: %v, want INVALID_BACKUP_CODE or ACCOUNT_TEMPORARILY_LOCKED", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent uses of one backup code succeeded, want exactly 1", ok, n)
	}
	// Stored only as hashes; another code still works, in any spelling.
	if got := f.rows(t, "backup_codes"); got != 9 {
		t.Fatalf("%d backup codes left, want 9", got)
	}
	f.clock.Advance(15 * time.Minute)
	ch := f.challenge(t)
	if _, err := f.svc.VerifySecondFactor(t.Context(), nil, auth.Client{}, auth.SecondFactorProof{Code: " " + upper(en.BackupCodes[4]), Backup: true, ChallengeToken: ch.Token}); err != nil {
		t.Fatalf("a second backup code: %v", err)
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func TestFreshnessTrustDeviceAndDisable(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p, _ := f.enrol(t)
	if err := f.svc.RequireFresh(p); err != nil {
		t.Fatalf("a new session is not fresh: %v", err)
	}
	ck, err := f.svc.TrustDeviceCookie(ctx, p)
	if err != nil || ck == nil {
		t.Fatalf("trust-device cookie: %v", err)
	}
	trust, ok := f.svc.Cookies().Verify(ck.Value)
	if !ok {
		t.Fatal("the trust-device cookie does not verify")
	}
	if _, err := f.svc.SignInTrusted(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{}, trust); err != nil {
		t.Fatalf("a trusted device was asked for the second factor: %v", err)
	}
	f.clock.Advance(11 * time.Minute)
	if err := f.svc.RequireFresh(p); !errors.Is(err, auth.ErrSessionNotFresh) {
		t.Fatalf("an 11-minute-old session: %v, want SESSION_NOT_FRESH", err)
	}
	mails := f.rows(t, "mail_outbox")
	p, err = f.svc.DisableTOTP(ctx, p, auth.Client{}, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.rows(t, "mail_outbox"); got != mails+1 {
		t.Fatalf("mails %d -> %d, want one notice of the removal", mails, got)
	}
	if _, err := f.svc.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{}); err != nil {
		t.Fatalf("sign-in after disabling: %v", err)
	}
	// Enrolling again voids the old trust-device cookie.
	en2, err := f.svc.EnableTOTP(ctx, p, auth.Client{}, "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(30 * time.Second)
	if _, err := f.svc.VerifySecondFactor(ctx, p, auth.Client{}, auth.SecondFactorProof{Code: codeAt(t, en2.TOTPURI, f.clock.Now())}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.SignInTrusted(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{}, trust)
	var req *auth.SecondFactorRequired
	if !errors.As(err, &req) {
		t.Fatalf("an old enrolment's trust-device cookie skipped the factor: %v", err)
	}
}
