package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// GaugeSnapshot is the database-wide figures operators watch, as the counter
// job last measured them. Requests and scrapes read a snapshot (one row)
// instead of counting tables that grow with the player base.
type GaugeSnapshot struct {
	Accounts              AccountCounts `json:"accounts"`
	PendingProfileChanges int64         `json:"pendingProfileChanges"`
	// Outbox counts messages by status; OldestPendingAt is the creation
	// time of the oldest message still pending, nil when none waits.
	Outbox          map[string]int64 `json:"outbox"`
	OldestPendingAt *time.Time       `json:"oldestPendingAt,omitempty"`
	// FailedMailAttempts counts delivery attempts that failed, for good
	// or temporarily, since the database began.
	FailedMailAttempts int64     `json:"failedMailAttempts"`
	OpenLobbies        int64     `json:"openLobbies"`
	RefreshedAt        time.Time `json:"refreshedAt"`
}

// GaugeStore measures the figures (the expensive part, run only by the
// counter job) and keeps the latest snapshot.
type GaugeStore interface {
	ConsoleStore
	PendingChangeCounter
	OutboxCounter
	LobbyCounter
	// CountFailedMailAttempts counts failed delivery attempts.
	CountFailedMailAttempts(ctx context.Context) (int64, error)
	// SaveSnapshot replaces the stored snapshot with body.
	SaveSnapshot(ctx context.Context, body []byte, at time.Time) error
	// LoadSnapshot returns the stored snapshot, ErrNoSnapshot when the
	// job has not run yet.
	LoadSnapshot(ctx context.Context) ([]byte, error)
}

// ErrNoSnapshot is returned by GaugeStore.LoadSnapshot before the first
// refresh.
var ErrNoSnapshot = errors.New("no gauge snapshot yet")

// Gauges owns the snapshot: Refresh is the counter job, the rest read the
// latest snapshot. It also answers the admin console's counter interfaces
// from the snapshot, so the bootstraps never count at request time.
type Gauges struct {
	store GaugeStore
	now   func() time.Time
}

// NewGauges returns the gauges over store.
func NewGauges(store GaugeStore, now func() time.Time) *Gauges {
	return &Gauges{store: store, now: now}
}

// Refresh measures every figure and stores the snapshot. It is the one
// place that counts whole tables; run it from one background job.
func (g *Gauges) Refresh(ctx context.Context) error {
	now := g.now().UTC()
	s := GaugeSnapshot{RefreshedAt: now}
	var err error
	if s.Accounts, err = g.store.CountAccounts(ctx, now); err != nil {
		return fmt.Errorf("refresh gauges: accounts: %w", err)
	}
	if s.PendingProfileChanges, err = g.store.CountPendingChanges(ctx, now); err != nil {
		return fmt.Errorf("refresh gauges: profile changes: %w", err)
	}
	outbox, err := g.store.CountOutbox(ctx, now)
	if err != nil {
		return fmt.Errorf("refresh gauges: outbox: %w", err)
	}
	s.Outbox = outbox.ByStatus
	if outbox.OldestPendingAgeSeconds > 0 {
		t := now.Add(-time.Duration(outbox.OldestPendingAgeSeconds) * time.Second)
		s.OldestPendingAt = &t
	}
	if s.FailedMailAttempts, err = g.store.CountFailedMailAttempts(ctx); err != nil {
		return fmt.Errorf("refresh gauges: mail attempts: %w", err)
	}
	if s.OpenLobbies, err = g.store.CountOpenLobbies(ctx, now); err != nil {
		return fmt.Errorf("refresh gauges: lobbies: %w", err)
	}
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := g.store.SaveSnapshot(ctx, body, now); err != nil {
		return fmt.Errorf("refresh gauges: save: %w", err)
	}
	return nil
}

// Snapshot returns the latest snapshot; before the first refresh, an
// empty one with a zero RefreshedAt.
func (g *Gauges) Snapshot(ctx context.Context) (*GaugeSnapshot, error) {
	body, err := g.store.LoadSnapshot(ctx)
	if errors.Is(err, ErrNoSnapshot) {
		return &GaugeSnapshot{Outbox: map[string]int64{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read gauges: %w", err)
	}
	var s GaugeSnapshot
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("read gauges: %w", err)
	}
	if s.Outbox == nil {
		s.Outbox = map[string]int64{}
	}
	return &s, nil
}

// CountAccounts implements ConsoleStore from the snapshot.
func (g *Gauges) CountAccounts(ctx context.Context, _ time.Time) (AccountCounts, error) {
	s, err := g.Snapshot(ctx)
	if err != nil {
		return AccountCounts{}, err
	}
	return s.Accounts, nil
}

// CountPendingChanges implements PendingChangeCounter from the snapshot.
func (g *Gauges) CountPendingChanges(ctx context.Context, _ time.Time) (int64, error) {
	s, err := g.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return s.PendingProfileChanges, nil
}

// CountOutbox implements OutboxCounter from the snapshot; the age of the
// oldest pending message is taken at now.
func (g *Gauges) CountOutbox(ctx context.Context, now time.Time) (OutboxCounts, error) {
	s, err := g.Snapshot(ctx)
	if err != nil {
		return OutboxCounts{}, err
	}
	out := OutboxCounts{ByStatus: s.Outbox}
	if s.OldestPendingAt != nil {
		out.OldestPendingAgeSeconds = max(0, int64(now.Sub(*s.OldestPendingAt).Seconds()))
	}
	return out, nil
}

// CountOpenLobbies implements LobbyCounter from the snapshot.
func (g *Gauges) CountOpenLobbies(ctx context.Context, _ time.Time) (int64, error) {
	s, err := g.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return s.OpenLobbies, nil
}
