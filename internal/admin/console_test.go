package admin_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"sync/atomic"
)

// clock is a settable clock shared by the services under test.
type clock struct{ ns atomic.Int64 }

func (c *clock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

type fixture struct {
	db    *store.DB
	clock *clock
	svc   *liveops.Service
	audit *audit.Log
}

// published returns a database with a live-ops configuration published
// at t0: short seed 11, long seed 22, and an event that plays long seed
// 777 until t0+144h.
func published(t testing.TB, env string) *fixture {
	t.Helper()
	db := storetest.Open(t)
	f := &fixture{db: db, clock: &clock{}}
	f.clock.set(t0)
	f.audit = audit.New(db.Audit(), f.clock.now)
	f.svc = liveops.New(db.LiveOps(), liveops.Options{Environment: env, Catalog: db.LiveOps()}, f.clock.now)
	cfg := liveops.Config{
		MapSeeds: liveops.MapSeeds{Short: 11, Long: 22},
		Events: []liveops.Event{{ID: "launch-week", Name: "Launch week", StartAt: t0.Add(-24 * time.Hour), EndAt: t0.Add(6 * 24 * time.Hour),
			MapSeeds: &liveops.MapSeeds{Long: 777}}},
	}
	if h, err := f.svc.Publish(t.Context(), "os:designer", cfg, nil, "first"); err != nil || h.Version != 1 {
		t.Fatalf("publish: %+v %v", h, err)
	}
	return f
}

// TestConsoleCounts builds accounts, sessions (one of them expired) and
// outbox messages at known times and checks every count of the console
// bootstrap at a known instant.
func TestConsoleCounts(t *testing.T) {
	ctx := t.Context()
	f := published(t, "development")
	accounts := account.New(f.db.Accounts(), account.NewHasher(account.Argon2Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}, account.Admission{}), f.clock.now)
	sessions := auth.New(auth.Deps{Store: f.db.Sessions(), Accounts: accounts}, auth.Options{
		Limiter: f.db.RateLimits(),
		Secret:  "0123456789abcdef0123456789abcdef", SessionTTL: 168 * time.Hour, RefreshAfter: 24 * time.Hour,
		PlayerCookiePrefix: "better-auth", AdminCookiePrefix: "platform-admin",
	}, f.clock.now)
	signUp := func(n string) {
		if _, err := sessions.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: n + "@example.com", Name: n, Nickname: n, Password: "correct horse"}, true, auth.Client{}); err != nil {
			t.Fatal(err)
		}
	}
	signUp("early") // its session expires at t0+168h
	f.clock.add(100 * time.Hour)
	signUp("late")
	ops, err := accounts.Create(ctx, account.RealmAdmin, account.NewUser{Email: "ops@example.com", Name: "Ops", Password: "correct horse", Role: "support"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.OpenSession(ctx, ops, true, auth.Client{}); err != nil {
		t.Fatal(err)
	}
	for _, created := range []time.Duration{150 * time.Hour, 160 * time.Hour} {
		m := &mail.Outgoing{ID: uuid.New(), Template: mail.TemplateProfileChange, To: "x@example.com", Subject: "s",
			Payload: []byte("sealed"), CreatedAt: t0.Add(created), ExpiresAt: t0.Add(created + time.Hour)}
		if err := f.db.Mail().EnqueueMail(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// Profile changes: one waiting with a live token, one whose token
	// expired, one completed. Only the first waits for anything.
	late, err := accounts.ByEmail(ctx, account.RealmPlayer, "late@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		status  string
		expires time.Duration
	}{{"pending", 200 * time.Hour}, {"pending", 150 * time.Hour}, {"completed", 200 * time.Hour}} {
		id := uuid.New()
		typ := []string{"profile", "email", "password"}[i]
		storetest.Exec(t, f.db, `INSERT INTO profile_changes (id, user_id, type, status, step, base_fingerprint, callback_url, requested_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, 'confirm', 'x', 'https://play.example.com/confirm', 'self', ?, ?)`, id, late.ID, typ, c.status, t0, t0)
		storetest.Exec(t, f.db, `INSERT INTO profile_tokens (token_hash, change_id, user_id, type, step, created_at, expires_at)
			VALUES (?, ?, ?, ?, 'confirm', ?, ?)`, uuid.NewString(), id, late.ID, typ, t0, t0.Add(c.expires))
	}
	f.clock.set(t0.Add(169 * time.Hour))

	lo := f.db.LiveOps()
	console := admin.NewConsole(admin.ConsoleDeps{
		Store: lo, Counters: admin.Counters{PendingProfileChanges: lo, MailOutbox: lo, OpenLobbies: lo}, LiveOps: f.svc, Audit: f.audit,
	}, admin.ConsoleOptions{
		Build: platform.Build{Version: "v1"}, Environment: "development", Database: f.db.Dialect(), StartedAt: t0,
	}, f.clock.now)
	b, err := console.Bootstrap(ctx, admin.Caller{ID: ops.ID, Email: ops.Email, Name: ops.Name, Role: role.Support})
	if err != nil {
		t.Fatal(err)
	}
	c := b.Counts
	if c.Players != 2 || c.PlayerSessions != 1 || c.Administrators != 1 || c.AdminSessions != 1 {
		t.Fatalf("account counts %+v, want 2 players with 1 live session, 1 admin with 1", c.AccountCounts)
	}
	if c.MailOutbox == nil || c.MailOutbox.ByStatus["pending"] != 2 || c.MailOutbox.ByStatus["sent"] != 0 || len(c.MailOutbox.ByStatus) != len(mail.Statuses) ||
		c.MailOutbox.OldestPendingAgeSeconds != int64(19*time.Hour/time.Second) {
		t.Fatalf("outbox %+v, want 2 pending, the oldest 19h old", c.MailOutbox)
	}
	if c.OpenLobbies == nil || *c.OpenLobbies != 0 || c.PendingProfileChanges == nil || *c.PendingProfileChanges != 1 {
		t.Fatalf("optional counts %+v", c)
	}
	if b.Runtime.UptimeSeconds != int64(169*time.Hour/time.Second) || !b.Runtime.ServerTime.Equal(f.clock.now()) {
		t.Fatalf("runtime %+v", b.Runtime)
	}
	if b.RecentAudit == nil || len(b.Maps) != 2 || b.Maps[1].Seed != 22 {
		t.Fatalf("support sees audit %v; maps %+v (the long override ended at t0+144h)", b.RecentAudit != nil, b.Maps)
	}
}

// BenchmarkConsoleBootstrap is GET /api/admin/bootstrap without HTTP.
func BenchmarkConsoleBootstrap(b *testing.B) {
	f := published(b, "development")
	ctx := b.Context()
	lo := f.db.LiveOps()
	console := admin.NewConsole(admin.ConsoleDeps{Store: lo,
		Counters: admin.Counters{PendingProfileChanges: lo, MailOutbox: lo, OpenLobbies: lo}, LiveOps: f.svc, Audit: f.audit,
	}, admin.ConsoleOptions{Environment: "development", Database: f.db.Dialect(), StartedAt: t0,
		Queues: []matchmaking.Queue{{ID: "casual-short", MapSize: "short"}, {ID: "casual-long", MapSize: "long"}}}, f.clock.now)
	caller := admin.Caller{Email: "ops@example.com", Role: role.Admin}
	for b.Loop() {
		if _, err := console.Bootstrap(ctx, caller); err != nil {
			b.Fatal(err)
		}
	}
}
