package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
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
// arrival time, and writes them all only when none is past its burst.
//
// A row lock only serialises attempts on a row that exists when the
// statement starts, and attempts racing on a fresh key would each see no
// row and all pass. So the statement decides nothing unless it locked a
// row for every key: it inserts the missing rows empty (tat 0, which no
// rule counts) and returns NULL, and Allow runs it again, when every
// attempt on the key queues on the one row.
//
// Attempts are stamped before they wait for the row, so they may reach it
// out of order; each counts at the latest time the key has seen (seen), so
// that one stamped a moment before its predecessor is not refused below
// the limit.
const rateLimitPostgres = `WITH req(key, step, burst) AS (VALUES %s),
locked AS (SELECT key, tat, seen FROM rate_limits WHERE key IN (SELECT key FROM req) ORDER BY key FOR UPDATE),
missing AS (INSERT INTO rate_limits (key, tat, step)
	SELECT key, 0, step FROM req WHERE key NOT IN (SELECT key FROM locked) ORDER BY key
	ON CONFLICT (key) DO NOTHING),
stamped AS (SELECT req.key, req.step, req.burst, locked.tat, GREATEST(locked.seen, ?::bigint) AS at
	FROM req JOIN locked USING (key)),
cur AS (SELECT key, step, burst, at, GREATEST(tat, at) + step AS tat FROM stamped),
verdict AS (SELECT CASE WHEN (SELECT count(*) FROM cur) < (SELECT count(*) FROM req) THEN NULL
	ELSE (SELECT MAX(tat - burst - at) FROM cur) END AS wait),
up AS (UPDATE rate_limits r SET tat = cur.tat, step = cur.step, seen = cur.at
	FROM cur WHERE r.key = cur.key AND (SELECT wait FROM verdict) <= 0)
SELECT wait FROM verdict`

// rateLimitRounds bounds how often Allow runs rateLimitPostgres on keys
// whose rows keep going missing (created, then swept, between rounds).
const rateLimitRounds = 3

// rateLimitVerdictSQLite is the verdict half of rateLimitPostgres; SQLite's
// immediate transactions serialise writers, so no row lock is needed.
const rateLimitVerdictSQLite = `WITH req(key, step, burst) AS (VALUES %s)
SELECT MAX(MAX(COALESCE(r.tat, 0), ?) + req.step - req.burst) - ? FROM req LEFT JOIN rate_limits r ON r.key = req.key`

const rateLimitCountSQLite = `INSERT INTO rate_limits (key, tat, step) VALUES (?, ? + ?, ?)
ON CONFLICT (key) DO UPDATE SET tat = MAX(rate_limits.tat, ?) + excluded.step, step = excluded.step`

// Allow counts one attempt against every check, all or nothing, and when
// any check is over its limit returns false with the wait until it is not.
// An error means nothing is known; callers fail closed.
//
// It runs on every sign-in and guarded request, so it takes the raw road:
// its values are parameters, and PostgreSQL prepares each statement once
// per connection.
func (l *RateLimits) Allow(ctx context.Context, now time.Time, checks ...ratelimit.Check) (bool, time.Duration, error) {
	at := now.UnixMicro()
	var args []any // a (key, step, burst) triple for each check
	for _, c := range checks {
		if c.Rule.Off() {
			continue
		}
		args = append(args, limitKey(c.Key), c.Rule.Window.Microseconds()/int64(c.Rule.Limit), c.Rule.Window.Microseconds())
	}
	if len(args) == 0 {
		return true, 0, nil
	}
	var wait int64
	var err error
	if l.db.dialect == Postgres {
		wait, err = l.allowPostgres(ctx, args, at)
	} else {
		wait, err = l.allowSQLite(ctx, args, at)
	}
	if err != nil {
		return false, 0, mapError(fmt.Errorf("rate limit: %w", err))
	}
	if wait > 0 {
		return false, time.Duration(wait) * time.Microsecond, nil
	}
	return true, 0, nil
}

// requestValues is the VALUES list of the rate-limit statements for the
// triples of args.
func requestValues(args []any, row string) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", len(args)/3), ", ")
}

// allowPostgres runs rateLimitPostgres until it has locked a row for every
// key; args holds the (key, step, burst) triples. The statement writes, so
// it is sent with writeOne, never repeated after it may have run.
func (l *RateLimits) allowPostgres(ctx context.Context, args []any, at int64) (int64, error) {
	q := fmt.Sprintf(rateLimitPostgres, requestValues(args, "(?::text, ?::bigint, ?::bigint)"))
	args = append(args[:len(args):len(args)], at)
	for range rateLimitRounds {
		var wait sql.NullInt64
		err := l.db.raw().writeOne(ctx, func(row rowScanner) error { return row.Scan(&wait) }, q, args...)
		if err != nil {
			return 0, err
		}
		if wait.Valid {
			return wait.Int64, nil
		}
	}
	return 0, errors.New("rate limit: key rows kept going missing")
}

// allowSQLite runs the verdict, then counts, in one immediate transaction;
// args holds the (key, step, burst) triples.
func (l *RateLimits) allowSQLite(ctx context.Context, args []any, at int64) (int64, error) {
	var wait int64
	err := l.db.InTx(ctx, func(ctx context.Context, tx Tx) error {
		// Under the write lock, an attempt stamped before one already
		// counted takes that one's time: attempts are then counted in the
		// order of their times, and one stamped earlier but counted later
		// does not find the count ahead of its time and get refused below
		// the limit.
		at := max(at, l.db.limitStamp.Load())
		l.db.limitStamp.Store(at)
		q := fmt.Sprintf(rateLimitVerdictSQLite, requestValues(args, "(?, ?, ?)"))
		verdict := append(append([]any{}, args...), at, at)
		if err := tx.one(ctx, func(row rowScanner) error { return row.Scan(&wait) }, q, verdict...); err != nil || wait > 0 {
			return err
		}
		for i := 0; i < len(args); i += 3 {
			if _, err := tx.exec(ctx, rateLimitCountSQLite, args[i], at, args[i+1], args[i+1], at); err != nil {
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

// Refund takes back one attempt counted by Allow against every check, for
// a request refused before it did what the limit guards (no hashing slot
// was free): moving a key's time back by one step leaves it as if the
// attempt had never come, once any earlier attempts are accounted for.
func (l *RateLimits) Refund(ctx context.Context, checks ...ratelimit.Check) error {
	for _, c := range checks {
		if c.Rule.Off() {
			continue
		}
		step := c.Rule.Window.Microseconds() / int64(c.Rule.Limit)
		if _, err := l.db.bun.NewUpdate().Table("rate_limits").Set("tat = tat - ?", step).
			Where("key = ?", limitKey(c.Key)).Exec(ctx); err != nil {
			return mapError(fmt.Errorf("rate limit refund: %w", err))
		}
	}
	return nil
}
