package account

import (
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
)

func TestValidEmail(t *testing.T) {
	tests := []struct {
		email string
		want  bool
	}{
		{"ada@example.com", true},
		{"a.b+tag@sub.example.co.uk", true},
		{"ada@localhost", false},
		{"ada@", false},
		{"@example.com", false},
		{"ada", false},
		{"ada@@example.com", false},
		{"ada @example.com", false},
		{"Ada <ada@example.com>", false},
		{"\"a b\"@example.com", false},
		{"ada@[127.0.0.1]", false},
		{"ada@example..com", false},
		{"ada@.example.com", false},
		{"ada@example.com.", false},
		{"ada@exa\x00mple.com", false},
		{"ada\n@example.com", false},
		{strings.Repeat("a", 65) + "@example.com", false},
		{"a@" + strings.Repeat("b", 250) + ".com", false},
		{"\xff@example.com", false},
		// Invisible characters anywhere, and domains left non-ASCII
		// (NormalizeEmail writes valid international ones as xn--).
		{"ada\u202e@example.com", false},
		{"ada@exam\u200bple.com", false},
		{"\ufeffada@example.com", false},
		{"ada@example\u3002com", false},
		{"ada@xn--r8jz45g.jp", true},
	}
	for _, tt := range tests {
		if got := ValidEmail(tt.email); got != tt.want {
			t.Errorf("ValidEmail(%q) = %v, want %v", tt.email, got, tt.want)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  Ada.Lovelace@Example.COM \t", "ada.lovelace@example.com"},
		// Look-alike full stops and full-width letters map to ASCII, so
		// they name the same account as the ASCII address.
		{"ada@example\u3002com", "ada@example.com"},
		{"ada@example\uff0ecom", "ada@example.com"},
		{"ada@example\uff61com", "ada@example.com"},
		{"ada@\uff45xample.com", "ada@example.com"},
		{"ada@例え.JP", "ada@xn--r8jz45g.jp"},
		// UTS #46 drops zero-width characters from a domain.
		{"ada@exam\u200bple.com", "ada@example.com"},
		// Left as it is when IDNA refuses it; ValidEmail then refuses it.
		{"ada@ex\u202eample.com", "ada@ex\u202eample.com"},
		{"ada@example.com\u3002", "ada@example.com."},
	}
	for _, tt := range tests {
		got := NormalizeEmail(tt.in)
		if got != tt.want {
			t.Errorf("NormalizeEmail(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if ValidEmail(got) != ValidEmail(tt.want) {
			t.Errorf("ValidEmail(NormalizeEmail(%q)) = %v", tt.in, ValidEmail(got))
		}
	}
	for _, bad := range []string{"ada\u200b@example.com", "ada@example.com\u3002", "ada@ex\u202eample.com"} {
		if ValidEmail(NormalizeEmail(bad)) {
			t.Errorf("%q is accepted once normalised", bad)
		}
	}
}

func TestValidateNameRefusesInvisibleCharacters(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"Ada Lovelace", true},
		{"Zoë 🙂", true},
		{"👩\u200d💻 coder", true}, // an emoji sequence joins with ZWJ
		{"می\u200cخواهم", true},  // Persian needs the non-joiner
		{"Ada \u202eevil.example", false},
		{"Ada\u2066x\u2069", false},
		{"\u200fAda", false},
		{"Ad\u200ba", false},
		{"Ada\ufeff", false},
		{"Ad\u00ada", false},
		{"Ada\u200d", false},
		{"A\u200c\u200cda", false},
		{"Ada \u200d x", false},
		{"unlock at https://evil.example\u0085", false},
	}
	for _, tt := range tests {
		err := ValidateName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	for _, nick := range []string{"ada\u202e", "a\u200bda", "\u2066ada"} {
		if ValidateNickname(nick) == nil {
			t.Errorf("nickname %q accepted", nick)
		}
	}
}

func TestValidateNickname(t *testing.T) {
	tests := []struct {
		nickname string
		ok       bool
	}{
		{"ada", true},
		{"Ada_Lovelace-1815", true},
		{"9lives", true},
		{"ab", false},
		{strings.Repeat("a", 24), true},
		{strings.Repeat("a", 25), false},
		{"_ada", false},
		{"-ada", false},
		{"ada lovelace", false},
		{"аda", false}, // Cyrillic а: look-alikes are refused
		{"ada!", false},
		{"", false},
	}
	for _, tt := range tests {
		err := ValidateNickname(tt.nickname)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateNickname(%q) = %v, want ok=%v", tt.nickname, err, tt.ok)
		}
		if err != nil && platform.ErrorCode(err) != platform.CodeValidation {
			t.Errorf("ValidateNickname(%q) code = %s, want VALIDATION_ERROR", tt.nickname, platform.ErrorCode(err))
		}
	}
	if NicknameKey("AdA_1") != NicknameKey("ada_1") {
		t.Fatal("nickname keys differ by case")
	}
}

func TestCheckPassword(t *testing.T) {
	tests := []struct {
		name, password, code string
	}{
		{"empty", "", platform.CodeValidation},
		{"seven", "1234567", CodePasswordTooShort},
		{"eight", "12345678", ""},
		{"128", strings.Repeat("x", 128), ""},
		{"129", strings.Repeat("x", 129), CodePasswordTooLong},
		// An emoji is two UTF-16 code units, as JavaScript counts it.
		{"4 emoji are 8 units", strings.Repeat("😀", 4), ""},
		{"64 emoji are 128 units", strings.Repeat("😀", 64), ""},
		{"65 emoji are 130 units", strings.Repeat("😀", 65), CodePasswordTooLong},
		{"7 accented letters", "ééééééé", CodePasswordTooShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := platform.ErrorCode(CheckPassword(tt.password)); got != tt.code {
				t.Fatalf("CheckPassword(%q) code = %q, want %q", tt.password, got, tt.code)
			}
		})
	}
}

func TestValidateNewUserReportsEveryField(t *testing.T) {
	_, err := validateNewUser(RealmPlayer, NewUser{Email: "nope", Name: " ", Nickname: "x", Password: ""})
	pe, ok := platform.As(err)
	if !ok || pe.Code != platform.CodeValidation {
		t.Fatalf("err = %v, want VALIDATION_ERROR", err)
	}
	fields := pe.Fields
	for _, f := range []string{"email", "name", "nickname", "password"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("details.fields lacks %q: %v", f, fields)
		}
	}
}

func TestValidateNewUserAdminHasNoNickname(t *testing.T) {
	u, err := validateNewUser(RealmAdmin, NewUser{Email: "Ops@Example.com", Name: "Ops", Nickname: "ignored", Password: "long enough pw"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Nickname != "" || u.Role != DefaultAdminRole || u.Email != "ops@example.com" {
		t.Fatalf("admin user = %+v", u)
	}
}

func TestValidateImage(t *testing.T) {
	bad := "javascript:alert(1)"
	if _, err := validateNewUser(RealmPlayer, NewUser{Email: "a@example.com", Name: "A", Nickname: "ada", Password: "12345678", Image: &bad}); err == nil {
		t.Fatal("javascript: image accepted")
	}
	good := "https://cdn.example.com/a.png"
	u, err := validateNewUser(RealmPlayer, NewUser{Email: "a@example.com", Name: "A", Nickname: "ada", Password: "12345678", Image: &good})
	if err != nil || u.Image == nil || *u.Image != good {
		t.Fatalf("image not kept: %v %+v", err, u)
	}
}
