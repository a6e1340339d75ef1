package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
)

// MonitorStore counts sessions.
type MonitorStore interface {
	// CountActiveSessions returns the number of unexpired sessions per
	// realm at now (realms with none may be missing).
	CountActiveSessions(ctx context.Context, now time.Time) (map[account.Realm]int, error)
}

// Monitor reports session figures to the metrics endpoint. The counts are
// database-wide.
type Monitor struct {
	store MonitorStore
	now   func() time.Time
}

// NewMonitor returns a monitor over store.
func NewMonitor(store MonitorStore, now func() time.Time) *Monitor {
	return &Monitor{store: store, now: now}
}

// ActiveSessions returns the unexpired sessions of each realm, both realms
// always present.
func (m *Monitor) ActiveSessions(ctx context.Context) (map[account.Realm]int, error) {
	byRealm, err := m.store.CountActiveSessions(ctx, m.now().UTC())
	if err != nil {
		return nil, fmt.Errorf("count sessions: %w", err)
	}
	out := map[account.Realm]int{account.RealmPlayer: 0, account.RealmAdmin: 0}
	for r, n := range byRealm {
		out[r] = n
	}
	return out, nil
}
