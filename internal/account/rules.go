package account

import (
	"net/mail"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
)

// The account rules. Password lengths are counted in UTF-16 code units, as
// better-auth counts them (JavaScript string length), so a password that
// the original service accepted is accepted here too.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 128
	MinNicknameLen = 3
	MaxNicknameLen = 24
	MaxNameLen     = 100
	MaxEmailLen    = 254
	MaxImageLen    = 2048
)

// DefaultAdminRole is the role of an administrator created without one.
const DefaultAdminRole = string(role.Default)

// NormalizeEmail trims and lower-cases an email address and writes a
// domain that is not plain ASCII in its IDNA ASCII form (UTS #46 mapping
// for lookup, as browsers resolve host names): full-width letters and the
// look-alike full stops U+3002, U+FF0E and U+FF61 map to their ASCII
// forms, and other scripts to "xn--" labels, so "a@example。com" is the
// same account as "a@example.com" and every domain is stored the way mail
// is delivered to it. A domain IDNA refuses is left as it is, and
// ValidEmail refuses it. Uniqueness and look-ups always use the
// normalised form.
func NormalizeEmail(email string) string {
	email = strings.ToLower(strings.TrimSpace(email))
	at := strings.LastIndexByte(email, '@')
	if at < 0 || isASCII(email[at+1:]) {
		return email
	}
	domain, err := idna.Lookup.ToASCII(email[at+1:])
	if err != nil {
		return email
	}
	return email[:at+1] + domain
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// validateEmail accepts a bare address (see ValidEmail).
func validateEmail(email string) error {
	if p := emailProblem(email); p != "" {
		return platform.Invalid("email", p)
	}
	return nil
}

func emailProblem(email string) string {
	if email == "" {
		return "is required"
	}
	if !ValidEmail(email) {
		return "Invalid email address"
	}
	return ""
}

// ValidEmail reports whether email (already normalised) is an address this
// service accepts: a bare address (no display name, no comments, no quoted
// local part, no IP literal) with a dotted ASCII domain (NormalizeEmail
// writes international ones in their IDNA form), without invisible format
// characters (bidi controls, zero-width spaces and joiners), at most
// MaxEmailLen bytes.
func ValidEmail(email string) bool {
	if len(email) > MaxEmailLen || !utf8.ValidString(email) {
		return false
	}
	for _, r := range email {
		if r <= ' ' || r == 0x7f || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || addr.Name != "" {
		return false
	}
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return false
	}
	local, domain := email[:at], email[at+1:]
	if local == "" || len(local) > 64 || strings.HasPrefix(local, "\"") {
		return false
	}
	if !isASCII(domain) || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.Contains(domain, "..") || strings.HasPrefix(domain, "[") {
		return false
	}
	return true
}

// NormalizeNickname trims surrounding spaces.
func NormalizeNickname(nickname string) string { return strings.TrimSpace(nickname) }

// NicknameKey is the case-folded form of a nickname that the unique index
// compares, so "Ada" and "ADA" cannot both exist. Nicknames are ASCII, so
// lower-casing is an exact case fold.
func NicknameKey(nickname string) string { return strings.ToLower(nickname) }

// ValidateNickname enforces the nickname rules on a normalised nickname:
// 3 to 24 characters, ASCII letters, digits, '_' and '-', beginning with a
// letter or digit. ASCII only, because look-alike letters from other
// scripts would defeat the case-insensitive uniqueness that keeps players
// from impersonating each other.
func ValidateNickname(nickname string) error {
	if p := nicknameProblem(nickname); p != "" {
		return platform.Invalid("nickname", p)
	}
	return nil
}

func nicknameProblem(nickname string) string {
	if nickname == "" {
		return "is required"
	}
	if len(nickname) < MinNicknameLen || len(nickname) > MaxNicknameLen {
		return "must be 3 to 24 characters"
	}
	for i := 0; i < len(nickname); i++ {
		c := nickname[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return "must begin with a letter or digit"
		}
		if !alnum && c != '_' && c != '-' {
			return "may contain only letters a-z, digits, '_' and '-'"
		}
	}
	return ""
}

// NormalizeName trims surrounding spaces.
func NormalizeName(name string) string { return strings.TrimSpace(name) }

// ValidateName requires a normalised display name of 1 to 100 characters
// without control characters or invisible format characters (see
// invisibleAt).
func ValidateName(name string) error {
	if p := nameProblem(name); p != "" {
		return platform.Invalid("name", p)
	}
	return nil
}

func nameProblem(name string) string {
	if name == "" {
		return "is required"
	}
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxNameLen {
		return "must be at most 100 characters"
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "must not contain control characters"
		}
	}
	if invisibleAt(name) {
		return "must not contain bidirectional controls or invisible characters"
	}
	return ""
}

// invisibleAt reports whether s holds a format character (Unicode Cf):
// bidirectional controls such as U+202E, which reorder the text around a
// name wherever it is shown, and zero-width or invisible ones (U+200B,
// U+2060, U+FEFF, U+00AD…), which make two names that look the same
// differ. The zero-width joiner and non-joiner (U+200D, U+200C) are the
// exception where they join two visible characters, as emoji sequences
// and Persian or Indic names need them.
func invisibleAt(s string) bool {
	runes := []rune(s)
	for i, r := range runes {
		if !unicode.Is(unicode.Cf, r) {
			continue
		}
		joiner := r == 0x200c || r == 0x200d
		if !joiner || i == 0 || i == len(runes)-1 || !visible(runes[i-1]) || !visible(runes[i+1]) {
			return true
		}
	}
	return false
}

func visible(r rune) bool {
	return !unicode.Is(unicode.Cf, r) && !unicode.IsSpace(r) && unicode.IsGraphic(r)
}

// imageProblem accepts an absolute http(s) URL of at most MaxImageLen bytes.
func imageProblem(image string) string {
	if len(image) > MaxImageLen {
		return "must be at most 2048 characters"
	}
	u, err := url.Parse(image)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "must be an absolute http or https URL"
	}
	return ""
}

// passwordLen counts UTF-16 code units, like JavaScript's String.length.
func passwordLen(password string) int {
	n := 0
	for _, r := range password {
		if r1 := utf16.RuneLen(r); r1 > 0 {
			n += r1
		} else {
			n++
		}
	}
	return n
}

// CheckPassword enforces the length rules on a new password:
// PASSWORD_TOO_SHORT below 8, PASSWORD_TOO_LONG above 128.
func CheckPassword(password string) error {
	if password == "" {
		return platform.Invalid("password", "is required")
	}
	if passwordLen(password) < MinPasswordLen {
		return platform.Errorf(platform.KindInvalid, CodePasswordTooShort, "Password too short")
	}
	return checkPasswordMax(password)
}

// checkPasswordMax also runs at sign-in, as in better-auth, so that an
// attacker cannot make the server hash megabytes.
func checkPasswordMax(password string) error {
	if len(password) > MaxPasswordLen*4 || passwordLen(password) > MaxPasswordLen {
		return platform.Errorf(platform.KindInvalid, CodePasswordTooLong, "Password too long")
	}
	return nil
}

// validateNewUser normalises and checks every field of in, reporting all
// field problems at once; the password length codes come after the fields.
func validateNewUser(realm Realm, in NewUser) (*User, error) {
	u := &User{
		Realm:    realm,
		Email:    NormalizeEmail(in.Email),
		Name:     NormalizeName(in.Name),
		Nickname: NormalizeNickname(in.Nickname),
		Role:     strings.TrimSpace(in.Role),
	}
	fields := platform.FieldErrors{}
	check := func(field, problem string) {
		if problem != "" {
			fields.Add(field, problem)
		}
	}
	check("email", emailProblem(u.Email))
	check("name", nameProblem(u.Name))
	switch realm {
	case RealmPlayer:
		check("nickname", nicknameProblem(u.Nickname))
		u.Role = ""
	case RealmAdmin:
		u.Nickname = ""
		if u.Role == "" {
			u.Role = DefaultAdminRole
		}
		// The role table is the one list of roles; an unknown one is refused.
		if r, err := role.Parse(u.Role); err != nil {
			fields.Add("role", "must be one of "+strings.Join(role.Names(), ", "))
		} else {
			u.Role = string(r)
		}
	}
	if in.Image != nil && strings.TrimSpace(*in.Image) != "" {
		img := strings.TrimSpace(*in.Image)
		check("image", imageProblem(img))
		u.Image = &img
	}
	if in.Password == "" {
		fields.Add("password", "is required")
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	if err := CheckPassword(in.Password); err != nil {
		return nil, err
	}
	return u, nil
}

// CheckNewUser validates in for realm as Prepare does, without hashing or
// reading anything, so that sign-up can refuse a malformed body before it
// counts an attempt.
func CheckNewUser(realm Realm, in NewUser) error {
	_, err := validateNewUser(realm, in)
	return err
}

// CheckCredentials validates the shape of a sign-in as Authenticate does,
// without reading anything, so that sign-in can refuse a malformed body
// before it counts an attempt.
func CheckCredentials(email, password string) error {
	if err := checkPasswordMax(password); err != nil {
		return err
	}
	return validateEmail(NormalizeEmail(email))
}
