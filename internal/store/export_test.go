package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/profile"
)

// Statement is a statement as the store sends it: its text, with the
// dialect's placeholders or its values written in, and the values sent
// as parameters.
type Statement struct {
	SQL  string
	Args []any
}

// HotStatements returns the hot statements of the query-shape tests, built
// by the same code that sends them, for these inputs.
func (db *DB) HotStatements(hash auth.TokenHash, userID uuid.UUID, pages []player.EdgePage, lobbies player.LobbyFilter, now time.Time) map[string]Statement {
	q := db.Player().playerQ
	return map[string]Statement{
		"session lookup": sent(q.bind(lookupSessionSQL, []any{hash[:]})),
		"social pages":   sent(q.bind(edgePagesSQL(userID, pages))),
		"social counts":  sent(q.bind(edgeCountsSQL, []any{userID})),
		"lobby list":     sent(q.bind(browseLobbiesSQL(lobbies))),
		"mail claim":     sent(q.bind(claimDueSQL(db.dialect == Postgres, "worker", now, now.Add(time.Minute)))),
	}
}

// SweepStatements returns one batch statement of every sweep, with cutoff
// as the time each is given, by the table it sweeps, as the sweeps send
// them: bun writes the values in.
func (db *DB) SweepStatements(cutoff time.Time) map[string]Statement {
	stmt := func(q string, args ...any) Statement { return Statement{SQL: db.bun.NewRaw(q, args...).String()} }
	s := db.Sweeps()
	return map[string]Statement{
		"sessions":        stmt(s.deleteSQL(expiredSessions), cutoff),
		"auth_tokens":     stmt(s.deleteSQL(expiredMailTokens), cutoff),
		"mail_outbox":     stmt(s.deleteSQL(finishedMail), cutoff),
		"lobbies":         stmt(s.deleteSQL(closedLobbies), cutoff),
		"profile_changes": stmt(s.deleteSQL(oldProfileChanges), cutoff),
		"rate_limits":     stmt(s.deleteSQL(staleRateLimits), cutoff.UnixMicro()),
		"audit_log":       stmt(s.deleteSQL(oldAuditEntries), cutoff),
		"stale passwords": stmt(s.batchSQL("UPDATE profile_changes SET new_password_hash = NULL", stalePasswords),
			profile.StatusPending, cutoff),
	}
}

func sent(query string, args []any) Statement { return Statement{query, args} }

// QueryInt runs query inside the transaction and scans the one integer it
// returns.
func (t Tx) QueryInt(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := t.idb.NewRaw(query, args...).Scan(ctx, &n)
	return n, err
}

// QueryInts runs query inside the transaction and scans the integers of
// its one column.
func (t Tx) QueryInts(ctx context.Context, query string, args ...any) ([]int64, error) {
	var ns []int64
	err := t.idb.NewRaw(query, args...).Scan(ctx, &ns)
	return ns, err
}
