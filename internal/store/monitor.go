package store

import (
	"context"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/mail"
)

// MailCounts counts messages per status and the delivery attempts that
// failed, temporarily or for good, for the metrics endpoint.
func (s *MailStore) MailCounts(ctx context.Context) (map[mail.Status]int, int, error) {
	var rows []struct {
		Status string `bun:"status"`
		N      int    `bun:"n"`
	}
	if err := s.db.bun.NewRaw(`SELECT status, COUNT(*) AS n FROM mail_outbox GROUP BY status`).Scan(ctx, &rows); err != nil {
		return nil, 0, mapError(err)
	}
	out := make(map[mail.Status]int, len(rows))
	for _, r := range rows {
		out[mail.Status(r.Status)] = r.N
	}
	var failed int
	if err := s.db.bun.NewRaw(`SELECT COUNT(*) FROM mail_attempts WHERE outcome IN (?, ?)`,
		string(mail.OutcomeRetry), string(mail.OutcomeFailed)).Scan(ctx, &failed); err != nil {
		return nil, 0, mapError(err)
	}
	return out, failed, nil
}

// CountActiveSessions counts unexpired sessions per realm, for the metrics
// endpoint.
func (s *SessionStore) CountActiveSessions(ctx context.Context, now time.Time) (map[account.Realm]int, error) {
	var rows []struct {
		Realm string `bun:"realm"`
		N     int    `bun:"n"`
	}
	if err := s.db.bun.NewRaw(`SELECT realm, COUNT(*) AS n FROM sessions WHERE expires_at > ? GROUP BY realm`, now.UTC()).
		Scan(ctx, &rows); err != nil {
		return nil, mapError(err)
	}
	out := make(map[account.Realm]int, len(rows))
	for _, r := range rows {
		out[account.Realm(r.Realm)] = r.N
	}
	return out, nil
}
