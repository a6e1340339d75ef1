package liveops_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// clock is a settable clock shared by the services under test.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}
func (c *clock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// testConfig is a small configuration with one of everything: a running
// event that overrides the long map seed, a later event, banners with and
// without a window, and a message.
func testConfig() liveops.Config {
	return liveops.Config{
		MapSeeds: liveops.MapSeeds{Short: 11, Long: 22},
		Flags: []liveops.Flag{
			{Key: "store-v2", Type: liveops.TypeBool, Default: false, Enabled: true, Rules: []liveops.Rule{
				{ID: "dev", Audience: liveops.Audience{Environments: []string{"development"}}, Value: true},
				{ID: "half", Audience: liveops.Audience{RolloutPercent: ptr(50)}, Value: true},
			}},
			{Key: "lobby-chat", Type: liveops.TypeBool, Default: false, Enabled: false},
		},
		Events: []liveops.Event{
			{ID: "launch-week", Name: "Launch week", StartAt: t0.Add(-24 * time.Hour), EndAt: t0.Add(6 * 24 * time.Hour),
				MapSeeds: &liveops.MapSeeds{Long: 777}},
			{ID: "winter-siege", Name: "Winter Siege", StartAt: t0.Add(30 * 24 * time.Hour), EndAt: t0.Add(50 * 24 * time.Hour)},
		},
		Banners: []liveops.Banner{
			{ID: "always", Title: "Always", Placement: liveops.PlacementHome, Priority: 1},
			{ID: "teaser", Title: "Teaser", Placement: liveops.PlacementPlay, Priority: 5,
				StartAt: ptr(t0.Add(time.Hour)), EndAt: ptr(t0.Add(2 * time.Hour))},
		},
		Messages: []liveops.Message{
			{ID: "welcome", Title: "Welcome", Body: "Build a deck.", StartAt: t0.Add(-time.Hour)},
		},
	}
}

type fixture struct {
	db    *store.DB
	clock *clock
	svc   *liveops.Service
	audit *audit.Log
}

// published returns a database with testConfig published as version 1.
func published(t *testing.T, env string) *fixture { return publishedEnv(t, env) }

func publishedTB(tb testing.TB) *fixture { return publishedEnv(tb, "development") }

func publishedEnv(t testing.TB, env string) *fixture {
	t.Helper()
	cfg := testConfig()
	if ps := cfg.Validate(nil); ps != nil {
		t.Fatalf("test configuration is invalid: %v", ps)
	}
	f := unpublished(t, env)
	if h, err := f.svc.Publish(t.Context(), "os:designer", cfg, nil, "first"); err != nil || h.Version != 1 {
		t.Fatalf("publish: %+v %v", h, err)
	}
	return f
}

func unpublished(t testing.TB, env string) *fixture {
	t.Helper()
	db := storetest.Open(t)
	c := newClock(t0)
	f := &fixture{db: db, clock: c, audit: audit.New(db.Audit(), c.now)}
	f.svc = f.another(env)
	return f
}

// another is a second service over the same database: another process.
func (f *fixture) another(env string) *liveops.Service {
	return liveops.New(f.db.LiveOps(), liveops.Options{Environment: env, Catalog: f.db.LiveOps()}, f.clock.now)
}

func TestNothingPublished(t *testing.T) {
	ctx := t.Context()
	f := unpublished(t, "development")
	if _, err := f.svc.Snapshot(ctx); platform.ErrorCode(err) != liveops.CodeNotPublished {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := f.svc.SetSeed(ctx, "os:alice", "short", 5, ""); platform.ErrorCode(err) != liveops.CodeNotPublished {
		t.Fatalf("set seed: %v", err)
	}
	// Until something is published the queues play the configured seeds.
	defaults := liveops.New(f.db.LiveOps(), liveops.Options{DefaultShortSeed: 1, DefaultLongSeed: 1 << 63}, f.clock.now)
	if short, long, err := defaults.MapSeeds(ctx); err != nil || short != 1 || long != 1<<63 {
		t.Fatalf("unpublished seeds %d %d %v", short, long, err)
	}
	ev, err := f.svc.Evaluate(ctx, liveops.Subject{PlayerID: "p1"})
	if err != nil || ev.Version != 0 || ev.Flags == nil || ev.Events == nil || ev.Messages == nil {
		t.Fatalf("players must get an empty evaluation, got %+v %v", ev, err)
	}
}

func TestPublish(t *testing.T) {
	ctx := t.Context()
	f := published(t, "development")
	cfg := testConfig()
	if h, err := f.svc.Publish(ctx, "os:bob", cfg, nil, ""); err != nil || h.Version != 1 {
		t.Fatalf("publishing the same body: %+v %v", h, err)
	}
	bad := testConfig()
	bad.Flags[0].Default = "yes"
	bad.Events[0].Queues = []string{"no-such-queue"}
	_, err := f.svc.Publish(ctx, "os:bob", bad, []string{"casual-short"}, "")
	pe, _ := platform.As(err)
	if pe == nil || pe.Code != liveops.CodeInvalidConfig || len(pe.Details["configProblems"].([]platform.Problem)) != 2 {
		t.Fatalf("invalid configuration: %v", err)
	}
	cfg.Flags[1].Enabled = true
	f.clock.add(time.Hour)
	h, err := f.svc.Publish(ctx, "os:bob", cfg, nil, "turn lobby chat on")
	if err != nil || h.Version != 2 || h.Source != liveops.SourceOperator || h.PublishedBy != "os:bob" || !h.PublishedAt.Equal(f.clock.now()) {
		t.Fatalf("publish: %+v %v", h, err)
	}
	snap, _ := f.svc.Snapshot(ctx)
	if len(snap.History) != 2 || snap.History[0].Version != 2 || snap.History[1].PublishedBy != "os:designer" || !snap.Flags[1].Enabled {
		t.Fatalf("snapshot after publish: %+v", snap)
	}
	entries, _ := f.audit.List(ctx, audit.Filter{Actor: "os:bob"})
	if len(entries) != 1 || entries[0].Action != liveops.ActionPublish || entries[0].Reason != "turn lobby chat on" || entries[0].Details["version"] != "2" {
		t.Fatalf("audit %+v", entries)
	}
}

// TestSnapshotStatusesFollowTheClock moves an injected clock across an
// event's start and end and checks the served status, and that the ETag
// changes exactly when the body does.
func TestSnapshotStatusesFollowTheClock(t *testing.T) {
	ctx := t.Context()
	f := published(t, "development")
	ev := testConfig().Events[1]
	statusOf := func(s *liveops.Snapshot) string {
		for _, e := range s.Events {
			if e.ID == ev.ID {
				return e.Status
			}
		}
		t.Fatalf("event %s missing", ev.ID)
		return ""
	}
	var lastTag string
	steps := []struct {
		at      time.Time
		want    string
		newETag bool
	}{
		{ev.StartAt.Add(-time.Second), liveops.StatusUpcoming, true},
		{ev.StartAt.Add(-time.Nanosecond), liveops.StatusUpcoming, false},
		{ev.StartAt, liveops.StatusActive, true},
		{ev.EndAt.Add(-time.Nanosecond), liveops.StatusActive, false},
		{ev.EndAt, liveops.StatusEnded, true},
		{ev.EndAt.Add(time.Hour), liveops.StatusEnded, false},
	}
	for _, st := range steps {
		f.clock.set(st.at)
		snap, err := f.svc.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := statusOf(snap); got != st.want {
			t.Fatalf("at %s: status %s, want %s", st.at, got, st.want)
		}
		if changed := snap.ETag != lastTag; changed != st.newETag {
			t.Fatalf("at %s: etag %s after %s; changed=%v, want %v", st.at, snap.ETag, lastTag, changed, st.newETag)
		}
		lastTag = snap.ETag
	}
}

func TestStatusBoundaries(t *testing.T) {
	start := time.Date(2026, 12, 18, 16, 0, 0, 0, time.UTC)
	end := start.Add(48 * time.Hour)
	var zero time.Time
	cases := []struct {
		start, end, at time.Time
		want           string
	}{
		{start, end, start.Add(-time.Nanosecond), liveops.StatusUpcoming},
		{start, end, start, liveops.StatusActive},
		{start, end, end.Add(-time.Nanosecond), liveops.StatusActive},
		{start, end, end, liveops.StatusEnded},
		{zero, end, start.Add(-1000 * time.Hour), liveops.StatusActive},
		{zero, end, end, liveops.StatusEnded},
		{start, zero, start.Add(-time.Nanosecond), liveops.StatusUpcoming},
		{start, zero, start.Add(1000 * time.Hour), liveops.StatusActive},
		{zero, zero, start, liveops.StatusActive},
	}
	for _, tc := range cases {
		if got := liveops.StatusAt(tc.start, tc.end, tc.at); got != tc.want {
			t.Errorf("StatusAt(%s, %s, %s) = %s, want %s", tc.start, tc.end, tc.at, got, tc.want)
		}
	}
}

func TestSnapshotIsStable(t *testing.T) {
	ctx := t.Context()
	f := published(t, "development")
	a, err := f.svc.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.another("development").Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("two servers serve different bytes:\n%s\n%s", ja, jb)
	}
	cfg := testConfig()
	if a.Version != 1 || a.Source != liveops.SourceOperator || a.PublishedBy != "os:designer" || a.ConfigETag != liveops.ETag(1, cfg.Hash()) ||
		!strings.HasPrefix(a.ETag, `"liveops-1-`) || a.CatalogVersion != 0 {
		t.Fatalf("snapshot head %+v", a)
	}
	if strings.Contains(string(ja), "null") {
		t.Errorf("snapshot contains null: %s", ja)
	}
	long := a.MapSeeds[1]
	if long.Size != gamemap.Long || long.Seed != 22 || long.EffectiveSeed != 777 || long.OverriddenBy != "launch-week" {
		t.Fatalf("long seed view %+v, want 22 overridden by launch-week's 777", long)
	}
	p, _ := f.another("production").Snapshot(ctx)
	if p.ETag == a.ETag {
		t.Fatal("production and development snapshots share an etag")
	}
}

func TestSetSeed(t *testing.T) {
	ctx := t.Context()
	f := published(t, "development")
	before, _ := f.svc.Snapshot(ctx)
	f.clock.add(time.Minute)
	ch, err := f.svc.SetSeed(ctx, "os:alice", "short", 424242, "  QA needs an overlap-heavy map ")
	if err != nil {
		t.Fatal(err)
	}
	if !ch.Changed || ch.From != 11 || ch.To != 424242 || ch.Version != 2 || ch.OverriddenBy != "" || ch.Map.Seed != 424242 ||
		ch.Map.Size != gamemap.Short || !ch.Map.Valid {
		t.Fatalf("change = %+v", ch)
	}
	// Another process sees the new seed on its next read.
	if short, long, err := f.another("development").MapSeeds(ctx); err != nil || short != 424242 || long != 777 {
		t.Fatalf("MapSeeds = %d, %d, %v; want 424242 and the running event's 777", short, long, err)
	}
	after, _ := f.svc.Snapshot(ctx)
	if after.Version != 2 || after.ETag == before.ETag || after.PublishedBy != "os:alice" || !after.PublishedAt.Equal(f.clock.now()) ||
		after.Source != liveops.SourceOperator || !strings.Contains(after.Description, "QA needs an overlap-heavy map") {
		t.Fatalf("after change: %+v", after)
	}
	entries, err := f.audit.List(ctx, audit.Filter{Actor: "os:alice"})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit entries %+v, %v", entries, err)
	}
	e := entries[0]
	want := map[string]string{"size": "short", "from": "11", "to": "424242", "version": "2"}
	if e.Action != liveops.ActionSetSeed || e.Target != "map-seed:short" || e.Reason != "QA needs an overlap-heavy map" || fmt.Sprint(e.Details) != fmt.Sprint(want) {
		t.Fatalf("audit entry %+v", e)
	}

	// The long map is overridden by the running event: the change is
	// stored, and the answer says why the queues do not use it yet.
	ch, err = f.svc.SetSeed(ctx, "os:alice", "long", 5, "")
	if err != nil || ch.OverriddenBy != "launch-week" || ch.Version != 3 {
		t.Fatalf("long change %+v %v", ch, err)
	}
	if _, got, _ := f.svc.MapSeeds(ctx); got != 777 {
		t.Fatalf("long seed during the event = %d, want the event's 777", got)
	}
	f.clock.set(testConfig().Events[0].EndAt)
	if _, got, _ := f.svc.MapSeeds(ctx); got != 5 {
		t.Fatalf("long seed after the event = %d, want 5", got)
	}

	same, err := f.svc.SetSeed(ctx, "os:bob", "short", 424242, "")
	if err != nil || same.Changed || same.Version != 3 {
		t.Fatalf("same seed: %+v, %v", same, err)
	}
	if n, _ := f.audit.List(ctx, audit.Filter{Actor: "os:bob"}); len(n) != 0 {
		t.Fatalf("a no-op change was audited: %+v", n)
	}
	bad := []struct {
		name, actor, size string
		seed              int64
		reason            string
	}{
		{"unknown size", "os:alice", "medium", 7, ""},
		{"zero seed", "os:alice", "short", 0, ""},
		{"negative seed", "os:alice", "short", -4, ""},
		{"no actor", " ", "short", 7, ""},
		{"long reason", "os:alice", "short", 7, strings.Repeat("x", 501)},
	}
	for _, tc := range bad {
		if _, err := f.svc.SetSeed(ctx, tc.actor, tc.size, tc.seed, tc.reason); platform.ErrorCode(err) != platform.CodeValidation {
			t.Errorf("%s: error %v, want %s", tc.name, err, platform.CodeValidation)
		}
	}
	if s, _ := f.svc.Snapshot(ctx); s.Version != 3 {
		t.Fatalf("a refused change moved the version to %d", s.Version)
	}
}

// TestConcurrentSetSeedLosesNothing runs writers on both sizes at once,
// each through its own service (process). Every change must get its own
// version, and replaying the audit trail in version order must chain:
// each change starts from the previous seed of its size. A lost update
// would break the chain.
func TestConcurrentSetSeedLosesNothing(t *testing.T) {
	ctx := t.Context()
	f := published(t, "development")
	const writers = 12
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := gamemap.Sizes[i%2]
			_, err := f.another("development").SetSeed(ctx, fmt.Sprintf("os:w%d", i), string(size), int64(1000+i), "")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	snap, err := f.another("development").Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 1+writers {
		t.Fatalf("version %d after %d changes, want %d", snap.Version, writers, 1+writers)
	}
	entries, _ := f.audit.List(ctx, audit.Filter{Limit: 100})
	var changes []audit.Entry
	for _, e := range entries {
		if e.Action == liveops.ActionSetSeed {
			changes = append(changes, e)
		}
	}
	slices.SortFunc(changes, func(a, b audit.Entry) int {
		va, _ := strconv.Atoi(a.Details["version"])
		vb, _ := strconv.Atoi(b.Details["version"])
		return va - vb
	})
	if len(changes) != writers {
		t.Fatalf("%d audit entries, want %d", len(changes), writers)
	}
	seeds := map[string]string{"short": "11", "long": "22"}
	for i, e := range changes {
		if e.Details["version"] != strconv.Itoa(i+2) {
			t.Fatalf("versions are not 2..%d: %+v", writers+1, changes)
		}
		if e.Details["from"] != seeds[e.Details["size"]] {
			t.Fatalf("change %s starts from %s, but the %s seed was %s: an update was lost", e.Details["version"], e.Details["from"], e.Details["size"], seeds[e.Details["size"]])
		}
		seeds[e.Details["size"]] = e.Details["to"]
	}
	for _, ms := range snap.MapSeeds {
		if strconv.FormatInt(ms.Seed, 10) != seeds[string(ms.Size)] {
			t.Fatalf("stored %s seed %d, audit trail ends at %s", ms.Size, ms.Seed, seeds[string(ms.Size)])
		}
	}
}

func TestEvaluateForPlayers(t *testing.T) {
	ctx := t.Context()
	dev := published(t, "development")
	ev, err := dev.svc.Evaluate(ctx, liveops.Subject{PlayerID: "6f1c2a4e-3b7d-4f0a-9c55-1d2e3f405162", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Version != 1 || ev.Flags["store-v2"].Rule != "dev" || ev.Flags["lobby-chat"].Reason != liveops.ReasonDisabled {
		t.Fatalf("development evaluation %+v", ev.Flags)
	}
	if len(ev.Messages) != 1 || ev.Messages[0].ID != "welcome" || len(ev.Banners) != 1 || ev.Banners[0].ID != "always" {
		t.Fatalf("messages %+v banners %+v", ev.Messages, ev.Banners)
	}
	// The production server skips the development rule: the player falls
	// to the rollout (bucket 51 of 100 for this flag: not in the first 50).
	prod := dev.another("production")
	pv, _ := prod.Evaluate(ctx, liveops.Subject{PlayerID: "6f1c2a4e-3b7d-4f0a-9c55-1d2e3f405162", CreatedAt: t0})
	if got := pv.Flags["store-v2"]; got.Reason != liveops.ReasonDefault || got.Value != false {
		t.Fatalf("production evaluation %+v", got)
	}
	dev.clock.set(t0.Add(90 * time.Minute))
	ev, _ = dev.svc.Evaluate(ctx, liveops.Subject{PlayerID: "p"})
	if len(ev.Banners) != 2 || ev.Banners[0].ID != "teaser" {
		t.Fatalf("banners at 12:30 %+v, want teaser first", ev.Banners)
	}
}

func TestEnvironmentAudienceIsValidated(t *testing.T) {
	cfg := testConfig()
	cfg.Flags[0].Rules[0].Audience.Environments = []string{"staging"}
	cfg.Messages = append(cfg.Messages, liveops.Message{ID: "welcome", Title: "", Body: "x", StartAt: t0, EndAt: ptr(t0.Add(-time.Hour))})
	ps := cfg.Validate(nil)
	var paths []string
	for _, p := range ps {
		paths = append(paths, p.Path)
	}
	for _, want := range []string{"flags[0].rules[0].audience.environments[0]", "messages[1].id", "messages[1].title", "messages[1]"} {
		if !slices.Contains(paths, want) {
			t.Errorf("no problem at %s; problems %v", want, ps)
		}
	}
}

// TestMapSeedsRefresh: with a refresh window, MapSeeds answers from memory
// until the window passes, then sees what another process published; what
// the service itself publishes it sees at once; and an event's seeds start
// and end on time even from memory.
func TestMapSeedsRefresh(t *testing.T) {
	ctx := t.Context()
	f := published(t, "development")
	svc := liveops.New(f.db.LiveOps(), liveops.Options{SeedRefresh: time.Second}, f.clock.now)
	if short, long, _ := svc.MapSeeds(ctx); short != 11 || long != 777 {
		t.Fatalf("seeds %d/%d, want 11 and the event's 777", short, long)
	}
	if _, err := f.another("development").SetSeed(ctx, "os:elsewhere", "short", 12, ""); err != nil {
		t.Fatal(err)
	}
	f.clock.add(999 * time.Millisecond)
	if short, _, _ := svc.MapSeeds(ctx); short != 11 {
		t.Fatalf("short %d inside the refresh window, want the remembered 11", short)
	}
	f.clock.add(time.Millisecond)
	if short, _, _ := svc.MapSeeds(ctx); short != 12 {
		t.Fatalf("short %d after the refresh window, want 12", short)
	}
	if _, err := svc.SetSeed(ctx, "os:here", "short", 13, ""); err != nil {
		t.Fatal(err)
	}
	if short, _, _ := svc.MapSeeds(ctx); short != 13 {
		t.Fatalf("short %d right after this service published 13", short)
	}
	end := testConfig().Events[0].EndAt
	f.clock.set(end.Add(-500 * time.Millisecond))
	if _, long, _ := svc.MapSeeds(ctx); long != 777 {
		t.Fatalf("long %d just before the event ends, want its 777", long)
	}
	f.clock.set(end) // within the window of that read: answered from memory
	if _, long, _ := svc.MapSeeds(ctx); long != 22 {
		t.Fatalf("long %d when the event ended, want the configured 22", long)
	}
}
