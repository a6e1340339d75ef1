package store_test

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// tokenHashMigration stores session and mailed-token hashes as 32 bytes.
const tokenHashMigration = 20261125000100

// The token-hash migration converts the rows already there, both ways: a
// session and a mailed token written while the hashes were hex text are
// found by their digest after the migration, and rolling it back turns the
// digests into the very hex text the old code wrote.
func TestTokenHashMigrationConvertsRows(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	m, err := db.Migrator()
	if err != nil {
		t.Fatal(err)
	}
	u := insertPlayer(t, db)
	now := time.Now().UTC().Truncate(time.Millisecond)
	sessions := db.Sessions()
	binarySession := newSession(t, u.ID, now)
	if err := sessions.InsertSession(ctx, binarySession); err != nil {
		t.Fatal(err)
	}

	downTo(t, m, tokenHashMigration)
	var text string
	if err := db.Bun().NewRaw("SELECT token_hash FROM sessions WHERE id = ?", binarySession.ID).Scan(ctx, &text); err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(binarySession.TokenHash[:]); text != want {
		t.Fatalf("after down, token_hash = %q, want the hex digest %q", text, want)
	}

	// Rows as the old code wrote them: the hex digest as text.
	hexSession := newSession(t, u.ID, now)
	mailToken, mailHash := "mailed-token", auth.HashToken("mailed-token")
	mustExec(t, db, `INSERT INTO sessions (id, token_hash, user_id, realm, remember, expires_at, created_at, updated_at)
		VALUES (?, ?, ?, 'player', TRUE, ?, ?, ?)`,
		hexSession.ID, hex.EncodeToString(hexSession.TokenHash[:]), u.ID, hexSession.ExpiresAt, now, now)
	mustExec(t, db, `INSERT INTO auth_tokens (id, token_hash, purpose, realm, user_id, email, expires_at, created_at)
		VALUES (?, ?, ?, 'player', ?, ?, ?, ?)`,
		uuid.New(), hex.EncodeToString(mailHash[:]), auth.PurposeResetPassword, u.ID, u.Email, now.Add(time.Hour), now)

	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	for _, s := range []*auth.Session{binarySession, hexSession} {
		got, _, err := sessions.SessionByTokenHash(ctx, s.TokenHash)
		if err != nil || got.ID != s.ID {
			t.Fatalf("session %v after up: got %+v, %v", s.ID, got, err)
		}
	}
	tok, err := sessions.PeekMailToken(ctx, auth.PurposeResetPassword, account.RealmPlayer, mailHash, now)
	if err != nil || !tok.TokenHash.Equal(mailHash) {
		t.Fatalf("mailed token %q after up: %+v, %v", mailToken, tok, err)
	}
	// The unique index came through the conversion.
	dup := newSession(t, u.ID, now)
	dup.TokenHash = hexSession.TokenHash
	if err := sessions.InsertSession(ctx, dup); err == nil || !strings.Contains(err.Error(), "token_hash") {
		t.Fatalf("a second session with the same token hash after up: %v, want a unique violation", err)
	}
}

// The columns take only a 32-byte digest. The old hex form is refused:
// SQLite would otherwise store the text, which never matches a lookup, and
// PostgreSQL would read the literal as 64 bytes.
func TestTokenHashColumnsRefuseHexText(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	u := insertPlayer(t, db)
	now := time.Now().UTC()
	hash := auth.HashToken("token")
	for _, table := range []string{"sessions", "auth_tokens"} {
		var err error
		if table == "sessions" {
			_, err = db.Bun().NewRaw(`INSERT INTO sessions (id, token_hash, user_id, realm, remember, expires_at, created_at, updated_at)
				VALUES (?, ?, ?, 'player', TRUE, ?, ?, ?)`, uuid.New(), hex.EncodeToString(hash[:]), u.ID, now, now, now).Exec(ctx)
		} else {
			_, err = db.Bun().NewRaw(`INSERT INTO auth_tokens (id, token_hash, purpose, realm, user_id, email, expires_at, created_at)
				VALUES (?, ?, ?, 'player', ?, ?, ?, ?)`, uuid.New(), hex.EncodeToString(hash[:]), auth.PurposeVerifyEmail, u.ID, u.Email, now, now).Exec(ctx)
		}
		if err == nil || !strings.Contains(err.Error(), "token_hash") {
			t.Errorf("%s took a hex token hash: %v, want the CHECK on token_hash to refuse it", table, err)
		}
	}
}

// downTo rolls back version and every migration after it.
func downTo(t *testing.T, m *store.Migrator, version int64) {
	t.Helper()
	applied, err := m.Applied(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var plan []store.Migration
	for _, mg := range applied { // newest first
		plan = append(plan, mg)
		if mg.Version == version {
			if _, err := m.Down(t.Context(), plan); err != nil {
				t.Fatalf("down: %v", err)
			}
			return
		}
	}
	t.Fatalf("migration %d is not applied", version)
}

func insertPlayer(t *testing.T, db *store.DB) *account.User {
	t.Helper()
	now := time.Now().UTC()
	u := &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: "hash@example.com", Name: "Hash",
		PasswordHash: "x", CreatedAt: now, UpdatedAt: now}
	if err := db.Accounts().InsertUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func newSession(t *testing.T, userID uuid.UUID, now time.Time) *auth.Session {
	t.Helper()
	_, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	return &auth.Session{ID: uuid.New(), TokenHash: hash, UserID: userID, Realm: account.RealmPlayer, Remember: true,
		ExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
}

func mustExec(t *testing.T, db *store.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Bun().NewRaw(query, args...).Exec(t.Context()); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
