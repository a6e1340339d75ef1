package admin

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
)

// Caller is the signed-in administrator a request comes from.
type Caller struct {
	ID    uuid.UUID
	Email string
	Name  string
	Role  role.Role
}

// AccountCounts are the account and session numbers an operator watches.
type AccountCounts struct {
	Players        int64 `json:"players"`
	Administrators int64 `json:"administrators"`
	// PlayerSessions and AdminSessions count sessions that have not expired.
	PlayerSessions int64 `json:"playerSessions"`
	AdminSessions  int64 `json:"adminSessions"`
}

// OutboxCounts describe the mail outbox.
type OutboxCounts struct {
	ByStatus map[string]int64 `json:"byStatus"`
	// OldestPendingAgeSeconds is the age of the oldest message still
	// waiting to be sent, 0 when none waits.
	OldestPendingAgeSeconds int64 `json:"oldestPendingAgeSeconds"`
}

// ConsoleStore counts accounts and sessions.
type ConsoleStore interface {
	CountAccounts(ctx context.Context, now time.Time) (AccountCounts, error)
}

// The counts that belong to other areas. Each is a small interface so
// that the console shows only what this build can measure: a nil counter
// leaves its count out of the bootstrap.
type (
	// PendingChangeCounter counts profile changes awaiting confirmation.
	PendingChangeCounter interface {
		CountPendingChanges(ctx context.Context, now time.Time) (int64, error)
	}
	// OutboxCounter counts the mail outbox by status.
	OutboxCounter interface {
		CountOutbox(ctx context.Context, now time.Time) (OutboxCounts, error)
	}
	// LobbyCounter counts lobbies that players can still join.
	LobbyCounter interface {
		CountOpenLobbies(ctx context.Context, now time.Time) (int64, error)
	}
)

// Counters are the optional counters; nil ones are skipped.
type Counters struct {
	PendingProfileChanges PendingChangeCounter
	MailOutbox            OutboxCounter
	OpenLobbies           LobbyCounter
}

// QueuePreset is what the console lists of a matchmaking queue preset.
type QueuePreset struct {
	ID      string       `json:"id"`
	Mode    string       `json:"mode"`
	MapSize gamemap.Size `json:"mapSize"`
	Enabled bool         `json:"enabled"`
}

// ConsoleDeps are what the admin console reads from.
type ConsoleDeps struct {
	Store    ConsoleStore
	Counters Counters
	LiveOps  *liveops.Service
	Audit    *audit.Log
}

// ConsoleOptions describe the running process the console shows.
type ConsoleOptions struct {
	Queues       []matchmaking.Queue
	Build        platform.Build
	Environment  string
	Database     string
	TestingTools bool
	StartedAt    time.Time
}

// Console builds the admin console's bootstrap.
type Console struct {
	d    ConsoleDeps
	opts ConsoleOptions
	now  func() time.Time

	mu   sync.Mutex
	maps map[mapKey]liveops.MapSummary // summaries by size and seed; seeds rarely change
}

type mapKey struct {
	size gamemap.Size
	seed int64
}

// NewConsole returns the admin console service.
func NewConsole(d ConsoleDeps, opts ConsoleOptions, now func() time.Time) *Console {
	return &Console{d: d, opts: opts, now: now, maps: map[mapKey]liveops.MapSummary{}}
}

// CallerView is the signed-in administrator and what it may do.
type CallerView struct {
	ID          uuid.UUID         `json:"id"`
	Email       string            `json:"email"`
	Name        string            `json:"name"`
	Role        role.Role         `json:"role"`
	Permissions []role.Permission `json:"permissions"`
}

// RoleView is one row of the permission table.
type RoleView struct {
	Role        role.Role         `json:"role"`
	Permissions []role.Permission `json:"permissions"`
}

// Runtime describes the running process.
type Runtime struct {
	Environment   string    `json:"environment"`
	Database      string    `json:"database"`
	GoVersion     string    `json:"goVersion"`
	StartedAt     time.Time `json:"startedAt"`
	UptimeSeconds int64     `json:"uptimeSeconds"`
	ServerTime    time.Time `json:"serverTime"`
	TestingTools  bool      `json:"testingTools"`
}

// ConsoleCounts are the numbers an operator watches. The optional ones are
// absent when this build has no such area.
type ConsoleCounts struct {
	AccountCounts
	PendingProfileChanges *int64        `json:"pendingProfileChanges,omitempty"`
	MailOutbox            *OutboxCounts `json:"mailOutbox,omitempty"`
	OpenLobbies           *int64        `json:"openLobbies,omitempty"`
}

// LiveOpsHead identifies the newest live-ops version without its content.
type LiveOpsHead struct {
	Version     int       `json:"version"`
	ETag        string    `json:"etag"`
	PublishedAt time.Time `json:"publishedAt"`
	PublishedBy string    `json:"publishedBy"`
}

// QueueView is a queue preset with the map it plays now.
type QueueView struct {
	QueuePreset
	// Seed is the seed of the queue's map size in force now (see liveops.MapSeedView).
	Seed         int64  `json:"seed"`
	OverriddenBy string `json:"overriddenBy,omitempty"`
}

// Bootstrap is what GET /api/admin/bootstrap answers.
type Bootstrap struct {
	Caller  CallerView     `json:"caller"`
	Roles   []RoleView     `json:"roles"`
	Build   platform.Build `json:"build"`
	Runtime Runtime        `json:"runtime"`
	Counts  ConsoleCounts  `json:"counts"`
	// LiveOps is absent until a configuration is published.
	LiveOps *LiveOpsHead `json:"liveOps,omitempty"`
	// Queues are the queue presets with their seeds; Maps summarize the
	// maps they play now, one per size. Both are empty until live-ops is
	// published.
	Queues []QueueView          `json:"queues"`
	Maps   []liveops.MapSummary `json:"maps"`
	// RecentAudit is the latest audit entries, newest first; absent when
	// the caller's role may not read the audit trail.
	RecentAudit []audit.Entry `json:"recentAudit,omitempty"`
}

// RecentAuditLimit is how many audit entries the bootstrap shows.
const RecentAuditLimit = 20

// Bootstrap returns the admin console's bootstrap for caller.
func (c *Console) Bootstrap(ctx context.Context, caller Caller) (*Bootstrap, error) {
	now := c.now().UTC()
	b := &Bootstrap{
		Caller: CallerView{ID: caller.ID, Email: caller.Email, Name: caller.Name, Role: caller.Role,
			Permissions: platform.OrEmpty(role.Permissions(caller.Role))},
		Build: c.opts.Build,
		Runtime: Runtime{
			Environment: c.opts.Environment, Database: c.opts.Database, GoVersion: runtime.Version(),
			StartedAt: c.opts.StartedAt.UTC().Truncate(time.Second), UptimeSeconds: int64(now.Sub(c.opts.StartedAt).Seconds()),
			ServerTime: now.Truncate(time.Second), TestingTools: c.opts.TestingTools,
		},
	}
	for _, r := range role.All() {
		b.Roles = append(b.Roles, RoleView{Role: r, Permissions: role.Permissions(r)})
	}
	var err error
	if b.Counts, err = c.counts(ctx, now); err != nil {
		return nil, err
	}
	b.Queues, b.Maps = []QueueView{}, []liveops.MapSummary{}
	snap, err := c.d.LiveOps.Snapshot(ctx)
	switch {
	case platform.ErrorCode(err) == liveops.CodeNotPublished:
	case err != nil:
		return nil, err
	default:
		b.LiveOps = &LiveOpsHead{Version: snap.Version, ETag: snap.ConfigETag, PublishedAt: snap.PublishedAt, PublishedBy: snap.PublishedBy}
		seeds := map[gamemap.Size]liveops.MapSeedView{}
		for _, s := range snap.MapSeeds {
			seeds[s.Size] = s
			b.Maps = append(b.Maps, c.summary(s.Size, s.EffectiveSeed))
		}
		for _, q := range c.opts.Queues {
			s := seeds[q.MapSize]
			p := QueuePreset{ID: q.ID, Mode: q.Mode, MapSize: q.MapSize, Enabled: q.Enabled}
			b.Queues = append(b.Queues, QueueView{QueuePreset: p, Seed: s.EffectiveSeed, OverriddenBy: s.OverriddenBy})
		}
	}
	if caller.Role.Can(role.AuditRead) {
		if b.RecentAudit, err = c.d.Audit.List(ctx, audit.Filter{Limit: RecentAuditLimit}); err != nil {
			return nil, err
		}
		b.RecentAudit = platform.OrEmpty(b.RecentAudit)
	}
	return b, nil
}

func (c *Console) counts(ctx context.Context, now time.Time) (ConsoleCounts, error) {
	var out ConsoleCounts
	var err error
	if out.AccountCounts, err = c.d.Store.CountAccounts(ctx, now); err != nil {
		return out, fmt.Errorf("count accounts: %w", err)
	}
	if f := c.d.Counters.PendingProfileChanges; f != nil {
		n, err := f.CountPendingChanges(ctx, now)
		if err != nil {
			return out, fmt.Errorf("count pending profile changes: %w", err)
		}
		out.PendingProfileChanges = &n
	}
	if f := c.d.Counters.MailOutbox; f != nil {
		o, err := f.CountOutbox(ctx, now)
		if err != nil {
			return out, fmt.Errorf("count mail outbox: %w", err)
		}
		out.MailOutbox = &o
	}
	if f := c.d.Counters.OpenLobbies; f != nil {
		n, err := f.CountOpenLobbies(ctx, now)
		if err != nil {
			return out, fmt.Errorf("count open lobbies: %w", err)
		}
		out.OpenLobbies = &n
	}
	return out, nil
}

// summary returns the map summary of size and seed, generating it once.
// The cache holds the few seeds a server ever serves; it is cleared when it
// grows past a bound so that a stream of seed changes cannot grow it.
func (c *Console) summary(size gamemap.Size, seed int64) liveops.MapSummary {
	k := mapKey{size, seed}
	c.mu.Lock()
	s, ok := c.maps[k]
	c.mu.Unlock()
	if ok {
		return s
	}
	s = liveops.SummarizeSeed(size, seed)
	c.mu.Lock()
	if len(c.maps) >= 32 {
		clear(c.maps)
	}
	c.maps[k] = s
	c.mu.Unlock()
	return s
}

// orEmpty returns s, or an empty slice for nil, so that lists answer []
// rather than null.
