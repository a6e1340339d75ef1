package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Error codes of the second factors (better-auth's twoFactor plugin).
const (
	CodeInvalidCode             = "INVALID_CODE"
	CodeInvalidBackupCode       = "INVALID_BACKUP_CODE"
	CodeInvalidTwoFactorCookie  = "INVALID_TWO_FACTOR_COOKIE"
	CodeTooManyAttempts         = "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE"
	CodeAccountLocked           = "ACCOUNT_TEMPORARILY_LOCKED"
	CodeTOTPAlreadyEnabled      = "TOTP_ALREADY_ENABLED"
	CodeTOTPNotEnabled          = "TOTP_NOT_ENABLED"
	CodeOTPNotConfigured        = "OTP_NOT_CONFIGURED"
	CodeBackupCodesNotAvailable = "BACKUP_CODES_NOT_ENABLED"
)

// The second-factor budgets: attempts on one sign-in challenge, failures
// before the account's second factor locks, and how long it stays locked
// (better-auth's figures).
const (
	challengeAttempts = 5
	accountFailures   = 10
	accountLockout    = 15 * time.Minute
	challengeTTL      = 10 * time.Minute
	trustDeviceTTL    = 30 * 24 * time.Hour
)

// TOTP parameters: what every authenticator app understands.
const (
	totpPeriod = 30
	totpDigits = otp.DigitsSix
	totpSkew   = 1
)

// backupCodeCount codes of backupCodeBytes random bytes each: 120 bits, so
// a SHA-256 of the code is as good as a slow hash (ASVS 6.5.2).
const (
	backupCodeCount = 10
	backupCodeBytes = 15
)

// MethodTOTP names the authenticator-app factor in twoFactorMethods.
const MethodTOTP = "totp"

var (
	errInvalidCode       = platform.Errorf(platform.KindUnauthenticated, CodeInvalidCode, "Invalid code")
	errInvalidBackupCode = platform.Errorf(platform.KindUnauthenticated, CodeInvalidBackupCode, "Invalid backup code")
	errInvalidChallenge  = platform.Errorf(platform.KindUnauthenticated, CodeInvalidTwoFactorCookie, "Invalid two factor cookie")
	errTooManyAttempts   = platform.Errorf(platform.KindInvalid, CodeTooManyAttempts, "Too many attempts. Please request a new code.")
	errTOTPEnabled       = platform.Errorf(platform.KindInvalid, CodeTOTPAlreadyEnabled, "TOTP already enabled")
	errTOTPNotEnabled    = platform.Errorf(platform.KindInvalid, CodeTOTPNotEnabled, "TOTP not enabled")
	// ErrSessionNotFresh: the session is older than the fresh age and the
	// action asked for no password or second factor in its place.
	ErrSessionNotFresh = platform.Errorf(platform.KindForbidden, platform.CodeSessionNotFresh,
		"Session is not fresh: sign in again or confirm with your password")
	errSecondFactorRequired = platform.Errorf(platform.KindForbidden, platform.CodeSecondFactorRequired,
		"Administrators must enrol a second factor first: a passkey, or POST /api/auth/admin/two-factor/enable, then verify-totp")
	// ErrNoTwoFactor is what a FactorStore returns for a user with no TOTP row.
	ErrNoTwoFactor = errors.New("no two-factor row")
	// ErrChallengeNotFound is what a FactorStore returns for an unknown challenge.
	ErrChallengeNotFound = errors.New("two-factor challenge not found")
)

// TwoFactor is a user's TOTP enrolment. Secret is sealed (secretbox);
// LastStep is the last 30-second step whose code was accepted, so no code
// works twice.
type TwoFactor struct {
	UserID      uuid.UUID
	Secret      string
	Verified    bool
	LastStep    int64
	FailedCount int
	LockedUntil time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Challenge is a password sign-in that still owes its second factor.
type Challenge struct {
	TokenHash TokenHash
	UserID    uuid.UUID
	Realm     account.Realm
	Remember  bool
	Attempts  int
	ExpiresAt time.Time
}

// SealedSecret is one stored TOTP seed, for re-encryption.
type SealedSecret struct {
	UserID uuid.UUID
	Secret string
}

// FactorStore persists second factors. Each method is one atomic step;
// the ones that report a bool report whether they changed a row, which is
// how concurrent uses of one code or step are told apart.
type FactorStore interface {
	TwoFactor(ctx context.Context, userID uuid.UUID) (*TwoFactor, error)
	// PutTwoFactor replaces the user's TOTP row and backup codes.
	PutTwoFactor(ctx context.Context, tf *TwoFactor, codeHashes [][]byte) error
	DeleteTwoFactor(ctx context.Context, userID uuid.UUID) (bool, error)
	// UseTOTPStep sets last_step to step (and verified) if it was lower.
	UseTOTPStep(ctx context.Context, userID uuid.UUID, step int64, at time.Time) (bool, error)
	// RecordFactorFailure counts a failure; at limit it locks the factor
	// until lockUntil and starts counting again.
	RecordFactorFailure(ctx context.Context, userID uuid.UUID, limit int, lockUntil, at time.Time) error
	ClearFactorFailures(ctx context.Context, userID uuid.UUID) error
	ReplaceBackupCodes(ctx context.Context, userID uuid.UUID, codeHashes [][]byte) error
	// UseBackupCode deletes the code; of concurrent callers one gets true.
	UseBackupCode(ctx context.Context, userID uuid.UUID, codeHash []byte) (bool, error)

	InsertChallenge(ctx context.Context, c *Challenge) error
	Challenge(ctx context.Context, tokenHash TokenHash) (*Challenge, error)
	// CountChallengeAttempt adds one attempt and returns the new count.
	CountChallengeAttempt(ctx context.Context, tokenHash TokenHash) (int, error)
	// TakeChallenge deletes the challenge; of concurrent callers one gets true.
	TakeChallenge(ctx context.Context, tokenHash TokenHash) (bool, error)

	// SealedSecrets pages through stored seeds in user id order.
	SealedSecrets(ctx context.Context, after uuid.UUID, limit int) ([]SealedSecret, error)
	// ReplaceSealedSecret swaps a seed if it still is old.
	ReplaceSealedSecret(ctx context.Context, userID uuid.UUID, old, updated string) (bool, error)
}

// Enrolment is what enabling TOTP hands the user once: the otpauth:// URI
// for an authenticator app and the backup codes.
type Enrolment struct {
	TOTPURI     string
	BackupCodes []string
}

// SecondFactorRequired is the answer to a first factor when the account
// has a second one: no session yet, a challenge the client proves the
// second factor against.
type SecondFactorRequired struct {
	Realm   account.Realm
	Token   string
	Methods []string
}

func (e *SecondFactorRequired) Error() string { return "second factor required" }

// RequireFresh refuses with SESSION_NOT_FRESH unless the principal's
// session was opened within the fresh age. Every sensitive change
// (second factors, passkeys, linked providers, email, deletion) calls it
// unless the request carried the password or a second factor instead.
func (s *Service) RequireFresh(p *Principal) error {
	if s.clock().Sub(p.Session.CreatedAt) <= s.opts.FreshAge {
		return nil
	}
	return ErrSessionNotFresh
}

// RequireSecondFactor refuses an administrator who holds no second
// factor with SECOND_FACTOR_REQUIRED when the service demands one of
// administrators (production). Enrolment routes do not call it.
func (s *Service) RequireSecondFactor(ctx context.Context, p *Principal) error {
	if !s.opts.AdminsNeedSecondFactor || p.Realm != account.RealmAdmin {
		return nil
	}
	methods, _, err := s.secondFactors(ctx, p.User.ID)
	if err != nil {
		return err
	}
	if len(methods) > 0 {
		return nil
	}
	if s.passkeys != nil {
		keys, err := s.passkeys.Passkeys(ctx, p.User.ID, 1)
		if err != nil {
			return fmt.Errorf("look up passkeys: %w", err)
		}
		if len(keys) > 0 {
			return nil
		}
	}
	return errSecondFactorRequired
}

// secondFactors returns the methods the user has enrolled, empty when none.
func (s *Service) secondFactors(ctx context.Context, userID uuid.UUID) ([]string, *TwoFactor, error) {
	if s.factors == nil { // a service built without second factors (tools)
		return nil, nil, nil
	}
	tf, err := s.factors.TwoFactor(ctx, userID)
	if errors.Is(err, ErrNoTwoFactor) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up second factor: %w", err)
	}
	if !tf.Verified {
		return nil, tf, nil
	}
	return []string{MethodTOTP}, tf, nil
}

// OpenSessionAfterFirstFactor is the one door every way in passes once the
// user proved a first factor (a password today; a provider, a passkey or a
// guest upgrade alike). An account with a second factor gets no session
// but a *SecondFactorRequired error carrying the challenge, unless
// trustDevice is a valid trust-device cookie value for it.
func (s *Service) OpenSessionAfterFirstFactor(ctx context.Context, u *account.User, remember bool, client Client, trustDevice string) (*Principal, error) {
	methods, tf, err := s.secondFactors(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	if len(methods) == 0 || s.trusted(u, tf, trustDevice) {
		return s.OpenSession(ctx, u, remember, client)
	}
	token, hash, err := NewToken()
	if err != nil {
		return nil, err
	}
	c := &Challenge{TokenHash: hash, UserID: u.ID, Realm: u.Realm, Remember: remember, ExpiresAt: s.clock().Add(challengeTTL)}
	if err := s.factors.InsertChallenge(ctx, c); err != nil {
		return nil, fmt.Errorf("open second-factor challenge: %w", err)
	}
	return nil, &SecondFactorRequired{Realm: u.Realm, Token: token, Methods: methods}
}

// totpStep is the 30-second step of t.
func totpStep(t time.Time) int64 { return t.Unix() / totpPeriod }

// matchTOTP returns the step within ±skew of now whose code is code and
// that is later than after, or false. Every candidate is compared so the
// time taken does not tell which one matched.
func matchTOTP(secret, code string, now time.Time, after int64) (int64, bool) {
	if len(code) != int(totpDigits) {
		return 0, false
	}
	opts := totp.ValidateOpts{Period: totpPeriod, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1}
	var found int64
	for d := int64(-totpSkew); d <= totpSkew; d++ {
		step := totpStep(now) + d
		want, err := totp.GenerateCodeCustom(secret, time.Unix(step*totpPeriod, 0), opts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 && step > after && found == 0 {
			found = step
		}
	}
	return found, found != 0
}

// newBackupCodes returns fresh codes as shown to the user and their hashes.
func newBackupCodes(userID uuid.UUID) ([]string, [][]byte, error) {
	codes := make([]string, backupCodeCount)
	hashes := make([][]byte, backupCodeCount)
	for i := range codes {
		var raw [backupCodeBytes]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, nil, fmt.Errorf("generate backup code: %w", err)
		}
		plain := strings.ToLower(base32.StdEncoding.EncodeToString(raw[:]))
		codes[i] = plain[0:6] + "-" + plain[6:12] + "-" + plain[12:18] + "-" + plain[18:24]
		hashes[i] = backupCodeHash(userID, plain)
	}
	return codes, hashes, nil
}

// normalizeBackupCode strips the dashes and spaces a user may type and
// reports whether what is left can be a backup code at all.
func normalizeBackupCode(code string) (string, bool) {
	if len(code) > 64 {
		return "", false
	}
	code = strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(code))
	if len(code) != 24 {
		return "", false
	}
	for _, c := range code {
		if !('a' <= c && c <= 'z') && !('2' <= c && c <= '7') {
			return "", false
		}
	}
	return code, true
}

// backupCodeHash binds a code to its user, so equal codes of two users
// (never expected) would still be different rows.
func backupCodeHash(userID uuid.UUID, normalized string) []byte {
	sum := sha256.Sum256([]byte("backup-code\x00" + userID.String() + "\x00" + normalized))
	return sum[:]
}

// secretContext binds a sealed seed to its user's row.
func secretContext(userID uuid.UUID) string { return "totp:" + userID.String() }
