package mail

import (
	"context"
	"fmt"
)

// Counts is the state of the whole outbox, for monitoring.
type Counts struct {
	// ByStatus has every status, zero included.
	ByStatus map[Status]int
	// FailedAttempts is how many delivery attempts ever ended in a
	// temporary or permanent failure.
	FailedAttempts int
}

// Depth is how many messages still wait to be delivered.
func (c Counts) Depth() int { return c.ByStatus[StatusPending] + c.ByStatus[StatusSending] }

// MonitorStore counts the outbox.
type MonitorStore interface {
	// MailCounts returns the number of messages per status (statuses
	// with none may be missing) and of failed delivery attempts.
	MailCounts(ctx context.Context) (map[Status]int, int, error)
}

// Monitor reports the outbox's state to the metrics endpoint. The counts
// are database-wide: every serve process on one database reports the
// same figures.
type Monitor struct{ store MonitorStore }

// NewMonitor returns a monitor over store.
func NewMonitor(store MonitorStore) *Monitor { return &Monitor{store: store} }

// Counts returns the current counts.
func (m *Monitor) Counts(ctx context.Context) (Counts, error) {
	byStatus, failed, err := m.store.MailCounts(ctx)
	if err != nil {
		return Counts{}, fmt.Errorf("count outbox: %w", err)
	}
	c := Counts{ByStatus: make(map[Status]int, len(Statuses)), FailedAttempts: failed}
	for _, s := range Statuses {
		c.ByStatus[s] = byStatus[s]
	}
	return c, nil
}
