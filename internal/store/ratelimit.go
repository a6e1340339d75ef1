package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/ratelimit"
)

// RateLimits counts attempts in the rate_limits table with the generic
// cell rate algorithm, so every serve process on the database shares one
// exact count. A key's row only grows stale: nothing evicts a key while
// it still limits anyone, and Sweeps.RateLimits (the rate-limit-counters
// job) deletes rows whose time has passed.
type RateLimits struct{ db *DB }

// RateLimits returns the shared attempt counters.
func (db *DB) RateLimits() *RateLimits { return &RateLimits{db: db} }

// rateLimitPostgres counts one attempt against every key in one statement
// (one round trip): it locks the keys' rows, computes each new theoretical
// arrival time, and writes them all only when none is past its burst. A key
// that a concurrent attempt inserts first is still counted exactly, as the
// conflict clause adds the step to whatever the row holds by then.
const rateLimitPostgres = `WITH req(key, step, burst) AS (VALUES %s),
locked AS (SELECT key, tat FROM rate_limits WHERE key IN (SELECT key FROM req) ORDER BY key FOR UPDATE),
cur AS (SELECT req.key, req.step, req.burst, GREATEST(COALESCE(locked.tat, 0), $1::bigint) + req.step AS tat
	FROM req LEFT JOIN locked USING (key)),
verdict AS (SELECT MAX(tat - burst) - $1::bigint AS wait FROM cur),
up AS (INSERT INTO rate_limits AS r (key, tat, step)
	SELECT key, tat, step FROM cur WHERE (SELECT wait FROM verdict) <= 0 ORDER BY key
	ON CONFLICT (key) DO UPDATE SET tat = GREATEST(r.tat, $1::bigint) + excluded.step, step = excluded.step)
SELECT wait FROM verdict`

// rateLimitVerdictSQLite is the verdict half of rateLimitPostgres; SQLite's
// immediate transactions serialise writers, so no row lock is needed.
const rateLimitVerdictSQLite = `WITH req(key, step, burst) AS (VALUES %s)
SELECT MAX(MAX(COALESCE(r.tat, 0), ?) + req.step - req.burst) - ? FROM req LEFT JOIN rate_limits r ON r.key = req.key`

const rateLimitCountSQLite = `INSERT INTO rate_limits (key, tat, step) VALUES (?, ? + ?, ?)
ON CONFLICT (key) DO UPDATE SET tat = MAX(rate_limits.tat, ?) + excluded.step, step = excluded.step`

// Allow counts one attempt against every check, all or nothing, and when
// any check is over its limit returns false with the wait until it is not.
// An error means nothing is known; callers fail closed.
func (l *RateLimits) Allow(ctx context.Context, now time.Time, checks ...ratelimit.Check) (bool, time.Duration, error) {
	at := now.UnixMicro()
	var values []string
	args := []any{at}
	for _, c := range checks {
		if c.Rule.Off() {
			continue
		}
		n := len(args)
		values = append(values, fmt.Sprintf("($%d::text, $%d::bigint, $%d::bigint)", n+1, n+2, n+3))
		args = append(args, limitKey(c.Key), c.Rule.Window.Microseconds()/int64(c.Rule.Limit), c.Rule.Window.Microseconds())
	}
	if len(values) == 0 {
		return true, 0, nil
	}
	var wait int64
	var err error
	if l.db.dialect == Postgres {
		// Numbered parameters, not bun's inlined ones, so the server
		// prepares the statement once per connection.
		q := fmt.Sprintf(rateLimitPostgres, strings.Join(values, ", "))
		err = l.db.bun.DB.QueryRowContext(ctx, q, args...).Scan(&wait)
	} else {
		wait, err = l.allowSQLite(ctx, len(values), args[1:], at)
	}
	if err != nil {
		return false, 0, mapError(fmt.Errorf("rate limit: %w", err))
	}
	if wait > 0 {
		return false, time.Duration(wait) * time.Microsecond, nil
	}
	return true, 0, nil
}

// allowSQLite runs the verdict, then counts, in one immediate transaction;
// args holds n (key, step, burst) triples.
func (l *RateLimits) allowSQLite(ctx context.Context, n int, args []any, at int64) (int64, error) {
	var wait int64
	err := l.db.InTx(ctx, func(ctx context.Context, tx Tx) error {
		// Under the write lock, an attempt stamped before one already
		// counted takes that one's time: attempts are then counted in the
		// order of their times, and one stamped earlier but counted later
		// does not find the count ahead of its time and get refused below
		// the limit.
		at := max(at, l.db.limitStamp.Load())
		l.db.limitStamp.Store(at)
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", n), ", ")
		q := fmt.Sprintf(rateLimitVerdictSQLite, values)
		if err := tx.idb.NewRaw(q, append(append([]any{}, args...), at, at)...).Scan(ctx, &wait); err != nil || wait > 0 {
			return err
		}
		for i := 0; i < len(args); i += 3 {
			if _, err := tx.idb.NewRaw(rateLimitCountSQLite, args[i], at, args[i+1], args[i+1], at).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	return wait, err
}

// limitKey hides the address or email in a key: the table only needs to
// tell keys apart.
func limitKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
