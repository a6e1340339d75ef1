// Package audit records administrative and support actions — who did what
// to whom, when and why — from the CLI and the API alike.
package audit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Entry is one recorded action.
type Entry struct {
	ID      int64             `json:"id"`
	At      time.Time         `json:"at"`
	Actor   string            `json:"actor"`
	Action  string            `json:"action"`
	Target  string            `json:"target"`
	Reason  string            `json:"reason"`
	Details map[string]string `json:"details"`
}

// Filter narrows List. Zero fields match everything.
type Filter struct {
	Actor string
	// Target is the entry's target exactly (a user's id for account and
	// session actions).
	Target string
	Action string
	Since  time.Time
	// Before, when set, keeps the entries older than that position: the
	// next page of a newest-first list.
	Before *Position
	Limit  int
}

// Position is an entry's place in the newest-first order.
type Position struct {
	At time.Time
	ID int64
}

// Store persists entries.
type Store interface {
	InsertAudit(ctx context.Context, e *Entry) error
	ListAudit(ctx context.Context, f Filter) ([]Entry, error)
}

// MaxReasonLen bounds the reason recorded with a change.
const MaxReasonLen = 500

// CheckActorReason refuses a change that names no actor or gives a reason
// longer than MaxReasonLen: every audited change records both.
func CheckActorReason(actor, reason string) error {
	if strings.TrimSpace(actor) == "" {
		return platform.Invalid("actor", "is required")
	}
	if len(reason) > MaxReasonLen {
		return platform.Invalid("reason", fmt.Sprintf("must be at most %d bytes", MaxReasonLen))
	}
	return nil
}

// Log is the audit trail.
type Log struct {
	store Store
	now   func() time.Time
}

// New returns an audit log over store.
func New(store Store, now func() time.Time) *Log {
	return &Log{store: store, now: now}
}

// Record writes one entry. Actor and action are required.
func (l *Log) Record(ctx context.Context, e Entry) error {
	if e.Actor == "" || e.Action == "" {
		return platform.Errorf(platform.KindInvalid, platform.CodeValidation, "an audit entry needs an actor and an action")
	}
	e.At = l.now().UTC()
	if e.Details == nil {
		e.Details = map[string]string{}
	}
	if err := l.store.InsertAudit(ctx, &e); err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	return nil
}

// List returns entries newest first; at most 1000, 50 by default.
func (l *Log) List(ctx context.Context, f Filter) ([]Entry, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	entries, err := l.store.ListAudit(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	return entries, nil
}
