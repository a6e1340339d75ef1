package role_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func now() time.Time { return t0 }

// insertAdmin adds an administrator row the way the account service
// stores one.
func insertAdmin(t *testing.T, db *store.DB, email string, r role.Role) uuid.UUID {
	t.Helper()
	id := uuid.New()
	now := time.Now().UTC()
	storetest.Exec(t, db,
		"INSERT INTO users (id, realm, email, name, password_hash, role, created_at, updated_at) VALUES (?, 'admin', ?, ?, 'x', ?, ?, ?)",
		id, email, email, string(r), now, now)
	return id
}

func roleOf(t *testing.T, db *store.DB, id uuid.UUID) role.Role {
	t.Helper()
	var r string
	storetest.Scan(t, db, &r, "SELECT role FROM users WHERE id = ?", id)
	return role.Role(r)
}

func TestSetRole(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	admins := role.NewAdmins(db.Admin(), now)
	log := audit.New(db.Audit(), now)
	root := insertAdmin(t, db, "root@example.com", role.Admin)
	ann := insertAdmin(t, db, "ann@example.com", role.Viewer)

	ch, err := admins.SetRole(ctx, "os:alice", role.AdminRef{Email: " Ann@Example.com "}, "LiveOps", "runs the winter event")
	if err != nil {
		t.Fatal(err)
	}
	if !ch.Changed || ch.From != role.Viewer || ch.To != role.LiveOps || ch.Admin.ID != ann || ch.Admin.Role != role.LiveOps {
		t.Fatalf("change %+v", ch)
	}
	if got := roleOf(t, db, ann); got != role.LiveOps {
		t.Fatalf("stored role %s", got)
	}
	entries, _ := log.List(ctx, audit.Filter{Actor: "os:alice"})
	if len(entries) != 1 || entries[0].Action != role.ActionSetRole || entries[0].Target != "admin:"+ann.String() ||
		entries[0].Reason != "runs the winter event" || entries[0].Details["from"] != "viewer" || entries[0].Details["to"] != "liveops" ||
		entries[0].Details["email"] != "ann@example.com" {
		t.Fatalf("audit %+v", entries)
	}

	same, err := admins.SetRole(ctx, "os:alice", role.AdminRef{ID: ann}, "liveops", "")
	if err != nil || same.Changed {
		t.Fatalf("same role: %+v %v", same, err)
	}
	if n, _ := log.List(ctx, audit.Filter{Actor: "os:alice"}); len(n) != 1 {
		t.Fatalf("no-op role change audited: %d entries", len(n))
	}

	cases := []struct {
		name string
		ref  role.AdminRef
		role string
		code string
	}{
		{"unknown role", role.AdminRef{ID: ann}, "superuser", role.CodeUnknownRole},
		{"unknown admin", role.AdminRef{Email: "nobody@example.com"}, "viewer", role.CodeAdminNotFound},
		{"unknown id", role.AdminRef{ID: uuid.New()}, "viewer", role.CodeAdminNotFound},
		{"both id and email", role.AdminRef{ID: ann, Email: "ann@example.com"}, "viewer", platform.CodeValidation},
		{"neither", role.AdminRef{}, "viewer", platform.CodeValidation},
		{"last admin", role.AdminRef{ID: root}, "support", role.CodeLastAdmin},
	}
	for _, tc := range cases {
		_, err := admins.SetRole(ctx, "os:alice", tc.ref, tc.role, "")
		if platform.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	if roleOf(t, db, root) != role.Admin {
		t.Fatal("the last admin lost the admin role")
	}

	// A player with the same email is not an administrator.
	storetest.Exec(t, db, "INSERT INTO users (id, realm, email, name, password_hash, created_at, updated_at) VALUES (?, 'player', 'pat@example.com', 'Pat', 'x', ?, ?)",
		uuid.New(), t0, t0)
	if _, err := admins.SetRole(ctx, "os:alice", role.AdminRef{Email: "pat@example.com"}, "admin", ""); platform.ErrorCode(err) != role.CodeAdminNotFound {
		t.Fatalf("player promoted: %v", err)
	}
}

// TestConcurrentDemotionsKeepAnAdmin demotes both of two admins at once,
// many times over: exactly one demotion may win each round.
func TestConcurrentDemotionsKeepAnAdmin(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	admins := role.NewAdmins(db.Admin(), now)
	a := insertAdmin(t, db, "a@example.com", role.Admin)
	b := insertAdmin(t, db, "b@example.com", role.Admin)
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, id := range []uuid.UUID{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = admins.SetRole(ctx, "os:test", role.AdminRef{ID: id}, "viewer", "")
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch platform.ErrorCode(err) {
			case "":
				won++
			case role.CodeLastAdmin:
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 || (roleOf(t, db, a) == role.Admin) == (roleOf(t, db, b) == role.Admin) {
			t.Fatalf("round %d: %d demotions won; roles %s and %s", round, won, roleOf(t, db, a), roleOf(t, db, b))
		}
		for _, id := range []uuid.UUID{a, b} {
			if _, err := admins.SetRole(ctx, "os:test", role.AdminRef{ID: id}, "admin", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
}
