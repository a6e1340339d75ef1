package account_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

var cheap = account.Argon2Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}

func newService(t *testing.T, db *store.DB, p account.Argon2Params) *account.Service {
	t.Helper()
	return account.New(db.Accounts(), account.NewHasher(p, account.Admission{}), time.Now)
}

func TestCreateEnforcesUniqueness(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	svc := newService(t, db, cheap)
	u, err := svc.Create(ctx, account.RealmPlayer, account.NewUser{
		Email: "  Ada@Example.com ", Name: " Ada ", Nickname: "Ada_L", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "ada@example.com" || u.Name != "Ada" || u.Nickname != "Ada_L" || u.EmailVerified {
		t.Fatalf("created user = %+v", u)
	}
	tests := []struct {
		name string
		in   account.NewUser
		code string
	}{
		{"same email, other case", account.NewUser{Email: "ADA@example.COM", Name: "X", Nickname: "other1", Password: "12345678"}, account.CodeUserExists},
		{"same nickname, other case", account.NewUser{Email: "b@example.com", Name: "X", Nickname: "aDA_l", Password: "12345678"}, account.CodeNicknameTaken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Create(ctx, account.RealmPlayer, tt.in)
			pe, ok := platform.As(err)
			if !ok || pe.Code != tt.code || pe.Kind != platform.KindUnprocessable {
				t.Fatalf("Create(%+v) = %v, want 422 %s", tt.in, err, tt.code)
			}
		})
	}
	// The realms are separate: the same email may be an administrator.
	admin, err := svc.Create(ctx, account.RealmAdmin, account.NewUser{Email: "ada@example.com", Name: "Ada", Password: "correct horse"})
	if err != nil {
		t.Fatalf("admin with a player's email: %v", err)
	}
	if admin.Role != account.DefaultAdminRole || admin.Nickname != "" {
		t.Fatalf("admin = %+v", admin)
	}
	got, err := svc.Find(ctx, account.RealmAdmin, admin.ID.String())
	if err != nil || got.ID != admin.ID || got.Role != "admin" {
		t.Fatalf("Find admin by id = %+v, %v", got, err)
	}
	if _, err := svc.Find(ctx, account.RealmPlayer, admin.ID.String()); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("Find admin id in player realm = %v, want not found", err)
	}
	got, err = svc.Find(ctx, account.RealmPlayer, "ADA@example.com")
	if err != nil || got.ID != u.ID || got.Nickname != "Ada_L" {
		t.Fatalf("Find player by email = %+v, %v", got, err)
	}
	if !got.CreatedAt.Equal(u.CreatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("created_at round trip: stored %v, read %v", u.CreatedAt, got.CreatedAt)
	}
}

func TestAuthenticate(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	svc := newService(t, db, cheap)
	u, err := svc.Create(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.Authenticate(ctx, account.RealmPlayer, " ADA@example.com", "correct horse")
	if err != nil || got.ID != u.ID {
		t.Fatalf("Authenticate = %v, %v", got, err)
	}
	for _, tt := range []struct{ name, email, password string }{
		{"wrong password", "ada@example.com", "wrong horse"},
		{"unknown email", "bob@example.com", "correct horse"},
		{"other realm", "ada@example.com", "correct horse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			realm := account.RealmPlayer
			if tt.name == "other realm" {
				realm = account.RealmAdmin
			}
			_, err := svc.Authenticate(ctx, realm, tt.email, tt.password)
			if !errors.Is(err, account.ErrInvalidCredentials) {
				t.Fatalf("Authenticate = %v, want INVALID_EMAIL_OR_PASSWORD", err)
			}
		})
	}
	if _, err := svc.Authenticate(ctx, account.RealmPlayer, "ada@example.com", strings.Repeat("x", 129)); platform.ErrorCode(err) != account.CodePasswordTooLong {
		t.Fatalf("Authenticate with 129 characters = %v, want PASSWORD_TOO_LONG", err)
	}
}

func TestAuthenticateRehashesOnNewParameters(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	old := newService(t, db, cheap)
	u, err := old.Create(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	stronger := newService(t, db, account.Argon2Params{MemoryKiB: 2048, Iterations: 2, Parallelism: 1})
	if _, err := stronger.Authenticate(ctx, account.RealmPlayer, "ada@example.com", "correct horse"); err != nil {
		t.Fatal(err)
	}
	after, _ := stronger.ByID(ctx, u.ID)
	if !strings.HasPrefix(after.PasswordHash, "$argon2id$v=19$m=2048,t=2,p=1$") {
		t.Fatalf("hash after sign-in = %q, want the new parameters", after.PasswordHash)
	}
	if _, err := stronger.Authenticate(ctx, account.RealmPlayer, "ada@example.com", "correct horse"); err != nil {
		t.Fatalf("sign-in after rehash: %v", err)
	}
}

func TestAuthenticateUpgradesBetterAuthScrypt(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	svc := newService(t, db, cheap)
	raw, err := os.ReadFile("testdata/better-auth-scrypt.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct{ Password, Hash string }
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	v := file.Vectors[0]
	now := time.Now().UTC().Truncate(time.Millisecond)
	carried := &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: "old@example.com", Name: "Old",
		Nickname: "oldtimer", PasswordHash: v.Hash, CreatedAt: now, UpdatedAt: now}
	if err := db.Accounts().InsertUser(ctx, carried); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, account.RealmPlayer, "old@example.com", "not it"); !errors.Is(err, account.ErrInvalidCredentials) {
		t.Fatalf("wrong password on a scrypt account = %v", err)
	}
	if after, _ := svc.ByID(ctx, carried.ID); after.PasswordHash != v.Hash {
		t.Fatal("a failed sign-in changed the stored hash")
	}
	if _, err := svc.Authenticate(ctx, account.RealmPlayer, "old@example.com", v.Password); err != nil {
		t.Fatalf("sign-in with the better-auth password: %v", err)
	}
	after, _ := svc.ByID(ctx, carried.ID)
	if !strings.HasPrefix(after.PasswordHash, "$argon2id$") {
		t.Fatalf("hash after sign-in = %q, want argon2id", after.PasswordHash)
	}
	if _, err := svc.Authenticate(ctx, account.RealmPlayer, "old@example.com", v.Password); err != nil {
		t.Fatalf("sign-in after the upgrade: %v", err)
	}
}

func TestVerifyAndHashPassword(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	svc := newService(t, db, cheap)
	u, err := svc.Create(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.VerifyPassword(ctx, u, "correct horse"); err != nil {
		t.Fatalf("VerifyPassword(right) = %v", err)
	}
	if err := svc.VerifyPassword(ctx, u, "wrong"); !errors.Is(err, account.ErrInvalidPassword) {
		t.Fatalf("VerifyPassword(wrong) = %v", err)
	}
	if _, err := svc.HashPassword(ctx, "short"); platform.ErrorCode(err) != account.CodePasswordTooShort {
		t.Fatalf("HashPassword(short) = %v", err)
	}
	h, err := svc.HashPassword(ctx, "a new password")
	if err != nil || !strings.HasPrefix(h, "$argon2id$") {
		t.Fatalf("HashPassword = %q, %v", h, err)
	}
}

// The unique indexes, not the early look in Prepare, are what decide: an
// insert that skips the look is refused with the same errors.
func TestUniqueIndexesDecide(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(email, nickname string) *account.User {
		return &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: email, Name: "X", Nickname: nickname,
			PasswordHash: "x:y", CreatedAt: now, UpdatedAt: now}
	}
	if err := db.Accounts().InsertUser(ctx, mk("a@example.com", "Racer")); err != nil {
		t.Fatal(err)
	}
	if err := db.Accounts().InsertUser(ctx, mk("b@example.com", "rACER")); !errors.Is(err, account.ErrNicknameTaken) {
		t.Fatalf("duplicate nickname key = %v", err)
	}
	if err := db.Accounts().InsertUser(ctx, mk("a@example.com", "other")); !errors.Is(err, account.ErrEmailTaken) {
		t.Fatalf("duplicate email = %v", err)
	}
	e, n, err := db.Accounts().Taken(ctx, account.RealmPlayer, "a@example.com", "racer")
	if err != nil || !e || !n {
		t.Fatalf("Taken = %v %v %v", e, n, err)
	}
	if e, n, _ := db.Accounts().Taken(ctx, account.RealmAdmin, "a@example.com", "racer"); e || n {
		t.Fatal("Taken crosses realms")
	}
}
