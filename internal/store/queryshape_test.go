package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// wantShape is what a hot statement's plan must show: it reads its rows
// through index and, when limited, that read feeds a LIMIT with nothing
// in between that waits for every row (a sort, a hash, a bitmap). A
// batch, one sweep statement, then finds the rows it changes by their
// keys, not by joining the batch to its table.
type wantShape struct {
	index   string
	limited bool
	batch   bool
}

// The hot statements, as the store builds them, and the shape of each.
// Every plan must also be free of whole-table scans and sorts.
var hotShapes = map[string]wantShape{
	"session lookup": {index: "sessions_token_hash_key", limited: false},
	"social pages":   {index: "social_edges_user_state_idx", limited: true},
	// The counts read all of one player's edges, which the caps bound.
	"social counts": {index: "social_edges_user_state_idx", limited: false},
	"lobby list":    {index: "lobbies_joinable_idx", limited: true},
	"mail claim":    {index: "mail_outbox_due_idx", limited: true},
}

// sweepIndexes is the index each sweep's batch must find its rows by.
var sweepIndexes = map[string]string{
	"sessions":        "sessions_expires_idx",
	"auth_tokens":     "auth_tokens_expires_idx",
	"mail_outbox":     "mail_outbox_done_idx",
	"lobbies":         "lobbies_closed_idx",
	"profile_changes": "profile_changes_updated_idx",
	"rate_limits":     "rate_limits_tat_idx",
	"audit_log":       "audit_log_recent_idx",
	"stale passwords": "profile_changes_updated_idx",
}

// The hot statements read through their indexes and stop at their LIMIT,
// on a data set lopsided as production's is (shapeData), whichever
// database the suite runs on. The statements come from the store's own
// builders (export_test.go), so the check is on what is sent.
//
// PostgreSQL plans with its statistics, so the tables are analyzed first,
// as autovacuum does. A statement sent with parameters is a prepared
// statement: its first five executions on a connection are planned for
// their values, and from then on PostgreSQL settles on a plan, usually the
// generic one. The plan checked is that settled plan, the one that serves
// nearly every request: the sixth EXPLAIN EXECUTE of the prepared
// statement. Statements sent with their values written in (the sweeps')
// are planned afresh each time, and checked as they are.
//
// SQLite never has statistics (nothing runs ANALYZE), so its plans come
// from its rules alone, as in production.
func TestHotQueriesUseTheirIndexes(t *testing.T) {
	db := storetest.Open(t)
	d := loadShapeData(t, db)
	if db.Dialect() == store.Postgres {
		if _, err := db.SQL().ExecContext(t.Context(), "VACUUM ANALYZE"); err != nil {
			t.Fatal(err)
		}
	}
	pages := []player.EdgePage{
		{State: "friend", Limit: 51},
		{State: "incoming", Limit: 51, After: &player.EdgeKey{Since: d.ago(301), Other: d.users[302]}},
		{State: "outgoing", Limit: 51},
		{State: "blocked", Limit: 51},
	}
	lobbies := player.LobbyFilter{Viewer: d.users[5], ActiveMin: d.now.Add(-30 * time.Minute), Limit: 50}
	hot := db.HotStatements(d.heavyHash, d.heavy, pages, lobbies, d.now)
	for name, want := range hotShapes {
		t.Run(name, func(t *testing.T) { checkShape(t, db, hot[name], want) })
	}
	if len(hot) != len(hotShapes) {
		t.Errorf("the store lists %d hot statements, the test expects %d", len(hot), len(hotShapes))
	}
	// Between two sweeps only rows past a cutoff a month back are due.
	sweeps := db.SweepStatements(d.now.Add(-30 * 24 * time.Hour))
	for name, st := range sweeps {
		index, ok := sweepIndexes[name]
		if !ok {
			t.Errorf("sweep %s has no expected index in this test", name)
			continue
		}
		t.Run("sweep "+name, func(t *testing.T) { checkShape(t, db, st, wantShape{index: index, limited: true, batch: true}) })
	}
}

func checkShape(t *testing.T, db *store.DB, st store.Statement, want wantShape) {
	t.Helper()
	if st.SQL == "" {
		t.Fatal("no such statement")
	}
	var problems []string
	if db.Dialect() == store.Postgres {
		problems = postgresShape(postgresPlan(t, db, st), want)
	} else {
		problems = sqliteShape(sqlitePlan(t, db, st), want)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Logf("statement:\n%s", st.SQL)
	}
}

// planNode is a node of PostgreSQL's EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Parent    string     `json:"Parent Relationship"`
	IndexName string     `json:"Index Name"`
	Relation  string     `json:"Relation Name"`
	Plans     []planNode `json:"Plans"`
}

// postgresPlan returns the plan PostgreSQL runs st with: for a statement
// with parameters, the one it settles on after five executions.
func postgresPlan(t *testing.T, db *store.DB, st store.Statement) planNode {
	t.Helper()
	ctx := t.Context()
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	explain := "EXPLAIN (FORMAT JSON) " + st.SQL
	if len(st.Args) > 0 {
		if _, err := conn.ExecContext(ctx, "PREPARE hot AS "+st.SQL); err != nil {
			t.Fatalf("prepare: %v", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "DEALLOCATE hot")
		values := make([]string, len(st.Args))
		for i, a := range st.Args {
			values[i] = db.Bun().NewRaw("?", a).String()
		}
		explain = "EXPLAIN (FORMAT JSON) EXECUTE hot(" + strings.Join(values, ", ") + ")"
		for range 5 { // the executions planned for their values
			if _, err := conn.ExecContext(ctx, explain); err != nil {
				t.Fatalf("explain: %v", err)
			}
		}
	}
	return explainJSON(t, conn, explain)
}

func explainJSON(t *testing.T, conn *sql.Conn, explain string) planNode {
	t.Helper()
	var raw []byte
	if err := conn.QueryRowContext(t.Context(), explain).Scan(&raw); err != nil {
		t.Fatalf("explain: %v", err)
	}
	var out []struct{ Plan planNode }
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("explain output %s: %v", raw, err)
	}
	return out[0].Plan
}

// waitsForAll are the nodes that read all of their input before passing
// on a row: a LIMIT above one does not stop the read below it.
var waitsForAll = map[string]bool{"Sort": true, "Incremental Sort": true, "Hash": true, "Aggregate": true,
	"Materialize": true, "Bitmap Heap Scan": true, "BitmapAnd": true, "BitmapOr": true}

// postgresShape lists how plan falls short of want.
func postgresShape(plan planNode, want wantShape) []string {
	var problems []string
	found := false
	var walk func(n planNode, path []string)
	walk = func(n planNode, path []string) {
		switch {
		case n.NodeType == "Seq Scan":
			problems = append(problems, "reads all of "+n.Relation+" (Seq Scan)")
		case n.NodeType == "Sort" || n.NodeType == "Incremental Sort":
			problems = append(problems, "sorts ("+n.NodeType+")")
		case n.IndexName == want.index:
			found = true
			if want.limited && !limitStops(n.NodeType, path) {
				problems = append(problems, fmt.Sprintf("%s of %s does not feed a LIMIT directly: %s",
					n.NodeType, want.index, strings.Join(path, " > ")))
			}
		}
		for _, c := range n.Plans {
			walk(c, append(path[:len(path):len(path)], n.NodeType))
		}
	}
	walk(plan, nil)
	if !found {
		problems = append(problems, "does not read "+want.index)
	}
	if want.batch {
		problems = append(problems, batchByKey(plan)...)
	}
	return problems
}

// batchByKey checks that the rows a batch statement changes are fetched
// by key: the ModifyTable's input is a scan of the table's primary key,
// not a join of the batch with the whole table.
func batchByKey(plan planNode) []string {
	if plan.NodeType != "ModifyTable" {
		return []string{"not a single DELETE or UPDATE: " + plan.NodeType}
	}
	for _, c := range plan.Plans {
		if c.Parent != "Outer" {
			continue // the batch's own read, an InitPlan
		}
		if strings.HasSuffix(c.IndexName, "_pkey") || len(c.Plans) == 1 && strings.HasSuffix(c.Plans[0].IndexName, "_pkey") {
			return nil
		}
		return []string{"finds the rows to change by " + c.NodeType + ", not by their keys"}
	}
	return []string{"no input to the DELETE or UPDATE"}
}

// limitStops reports whether a scan of type scan, under the nodes of path
// (outermost first), is an ordered index read that its nearest LIMIT stops.
func limitStops(scan string, path []string) bool {
	if scan != "Index Scan" && scan != "Index Only Scan" {
		return false
	}
	for i := len(path) - 1; i >= 0; i-- {
		switch {
		case path[i] == "Limit":
			return true
		case waitsForAll[path[i]]:
			return false
		}
	}
	return false
}

// sqlitePlan returns the detail lines of EXPLAIN QUERY PLAN.
func sqlitePlan(t *testing.T, db *store.DB, st store.Statement) []string {
	t.Helper()
	rows, err := db.SQL().QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+st.SQL, st.Args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var details []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		details = append(details, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return details
}

var (
	sqliteSubquery = regexp.MustCompile(`^(?:CO-ROUTINE|MATERIALIZE) (\S+)`)
	sqliteFullScan = regexp.MustCompile(`^SCAN (\S+)$`)
)

// sqliteShape lists how plan falls short of want. SQLite walks an index
// in the statement's order ("SCAN t USING INDEX i") or searches a range
// of it ("SEARCH t USING INDEX i (…)") and, with no temporary B-tree to
// sort into, hands each row on as it finds it, so a LIMIT stops the walk.
func sqliteShape(plan []string, want wantShape) []string {
	var problems []string
	found := false
	subqueries := map[string]bool{}
	for _, detail := range plan {
		if m := sqliteSubquery.FindStringSubmatch(detail); m != nil {
			subqueries[m[1]] = true
		}
		if m := sqliteFullScan.FindStringSubmatch(detail); m != nil && !subqueries[m[1]] {
			problems = append(problems, "reads all of "+m[1]+": "+detail)
		}
		if strings.Contains(detail, "TEMP B-TREE") || strings.Contains(detail, "AUTOMATIC") {
			problems = append(problems, "sorts or indexes at run time: "+detail)
		}
		found = found || strings.HasSuffix(detail, "INDEX "+want.index) || strings.Contains(detail, "INDEX "+want.index+" ")
	}
	if !found {
		problems = append(problems, fmt.Sprintf("does not read %s: %q", want.index, plan))
	}
	return problems
}

// shapeData is a small but lopsided data set, shaped like production's:
// most sessions alive, most lobbies closed, most mail sent, and in every
// swept table only a few rows past their time, as between two sweeps.
// Player 0 has a large social graph.
type shapeData struct {
	now   time.Time
	users []uuid.UUID
	// heavy is player 0; heavyHash is the hash of one of its sessions.
	heavy     uuid.UUID
	heavyHash auth.TokenHash
}

const (
	shapePlayers  = 3000
	shapeSessions = 3 // per player
	shapeLobbies  = 1000
	shapeClosed   = 20000
	shapeMail     = 3000
	shapeRows     = 3000 // rows of each other swept table
	// One row in shapeStale of each swept table is past its time.
	shapeStale = 50
)

func loadShapeData(t *testing.T, db *store.DB) *shapeData {
	t.Helper()
	d := &shapeData{now: time.Now().UTC().Truncate(time.Second)}
	for i := range shapePlayers {
		d.users = append(d.users, uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "player-%d", i)))
	}
	d.heavy = d.users[0]
	d.heavyHash = auth.HashToken("session-0")
	d.loadUsers(t, db)
	d.loadSocial(t, db)
	d.loadLobbies(t, db)
	d.loadMail(t, db)
	d.loadSwept(t, db)
	return d
}

// ago is a time before now: stale rows are far in the past, others recent.
func (d *shapeData) ago(i int) time.Time {
	if i%shapeStale == 0 {
		return d.now.Add(-400 * 24 * time.Hour)
	}
	return d.now.Add(-time.Duration(i) * time.Second)
}

func (d *shapeData) loadUsers(t *testing.T, db *store.DB) {
	insertRows(t, db, "users", "id, realm, email, name, nickname, nickname_key, email_verified, password_hash, created_at, updated_at",
		shapePlayers, func(i int) []any {
			nick := fmt.Sprintf("p%d", i)
			return []any{d.users[i], "player", nick + "@example.com", nick, nick, nick, true, "x", d.now, d.now}
		})
	insertRows(t, db, "sessions", "id, token_hash, user_id, realm, remember, expires_at, created_at, updated_at",
		shapePlayers*shapeSessions, func(i int) []any {
			h := auth.HashToken(fmt.Sprintf("session-%d", i))
			expires := d.now.Add(time.Duration(i+1) * time.Minute)
			if i%shapeStale == 1 {
				expires = d.ago(0)
			}
			return []any{uuid.New(), h[:], d.users[i%shapePlayers], "player", true, expires, d.now, d.now}
		})
}

// loadSocial gives player 0 a heavy graph and every other player a friend.
func (d *shapeData) loadSocial(t *testing.T, db *store.DB) {
	// At the caps: 200 friends, 500 incoming, 50 outgoing, 20 blocked.
	state := func(i int) string {
		switch {
		case i < 200:
			return "friend"
		case i < 700:
			return "incoming"
		case i < 750:
			return "outgoing"
		}
		return "blocked"
	}
	insertRows(t, db, "social_edges", "user_id, other_id, state, since", 770, func(i int) []any {
		return []any{d.heavy, d.users[i+1], state(i), d.ago(i + 1)}
	})
	insertRows(t, db, "social_edges", "user_id, other_id, state, since", shapePlayers-2, func(i int) []any {
		return []any{d.users[i+1], d.users[i+2], "friend", d.ago(i + 1)}
	})
}

// loadLobbies writes open lobbies, most of them joinable, each with its
// host as a member, and many more closed ones.
func (d *shapeData) loadLobbies(t *testing.T, db *store.DB) {
	lobbyID := func(i int) uuid.UUID { return uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "lobby-%d", i)) }
	insertRows(t, db, "lobbies", "id, join_code, queue_id, visibility, status, host_id, capacity, member_count, created_at, updated_at, active_at, closed_at",
		shapeLobbies+shapeClosed, func(i int) []any {
			created := d.now.Add(-time.Duration(i) * time.Second)
			host := d.users[1+i%(shapePlayers-1)]
			if i < shapeLobbies {
				members := 1 + i%10/9 // one in ten full
				visibility := []string{"public", "public", "public", "friends", "private"}[i%5]
				active := d.now.Add(-time.Duration(i%1200) * time.Second)
				return []any{lobbyID(i), fmt.Sprintf("J%05d", i), "casual", visibility, "open", host, 2, members, created, created, active, nil}
			}
			return []any{lobbyID(i), nil, "casual", "public", "closed", host, 2, 0, created, created, created, d.ago(i)}
		})
	insertRows(t, db, "lobby_members", "user_id, lobby_id, ready, joined_at", shapeLobbies, func(i int) []any {
		return []any{d.users[1+i], lobbyID(i), false, d.now}
	})
}

// loadMail writes sent mail and a few messages due now.
func (d *shapeData) loadMail(t *testing.T, db *store.DB) {
	insertRows(t, db, "mail_outbox", "id, template, recipient, subject, status, attempts, next_attempt_at, expires_at, created_at, updated_at",
		shapeMail, func(i int) []any {
			status, next := "sent", d.ago(i)
			if i%100 == 0 {
				status, next = "pending", d.now.Add(-time.Minute)
			}
			return []any{uuid.New(), "verify-email", "p@example.com", "Verify", status, 1, next, d.now.Add(time.Hour), d.ago(i), d.ago(i)}
		})
}

// loadSwept fills the remaining swept tables.
func (d *shapeData) loadSwept(t *testing.T, db *store.DB) {
	insertRows(t, db, "auth_tokens", "id, token_hash, purpose, realm, user_id, email, expires_at, created_at", shapeRows, func(i int) []any {
		h := auth.HashToken(fmt.Sprintf("mailed-%d", i))
		expires := d.now.Add(time.Hour)
		if i%shapeStale == 0 {
			expires = d.ago(0)
		}
		return []any{uuid.New(), h[:], "verify-email", "player", d.users[i%shapePlayers], "p@example.com", expires, d.now}
	})
	insertRows(t, db, "profile_changes", "id, user_id, type, status, step, new_password_hash, base_fingerprint, callback_url, requested_by, created_at, updated_at",
		shapeRows, func(i int) []any {
			if i < shapePlayers/10 { // one pending password change each
				return []any{uuid.New(), d.users[i], "password", "pending", "confirm", "x", "f", "/", "user", d.ago(i), d.ago(i)}
			}
			return []any{uuid.New(), d.users[i%shapePlayers], "profile", "completed", "done", nil, "f", "/", "user", d.ago(i), d.ago(i)}
		})
	insertRows(t, db, "rate_limits", "key, tat, step", shapeRows, func(i int) []any {
		return []any{fmt.Sprintf("k%d", i), d.ago(i).Add(time.Hour).UnixMicro(), 1}
	})
	insertRows(t, db, "audit_log", "at, actor, action", shapeRows, func(i int) []any { return []any{d.ago(i), "admin", "test"} })
}

// insertRows writes n rows into table, row(i) giving the values of the
// columns cols, a few hundred rows a statement.
func insertRows(t *testing.T, db *store.DB, table, cols string, n int, row func(i int) []any) {
	t.Helper()
	width := strings.Count(cols, ",") + 1
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	for start := 0; start < n; start += 500 {
		end := min(start+500, n)
		args := make([]any, 0, (end-start)*width)
		for i := start; i < end; i++ {
			args = append(args, row(i)...)
		}
		query := "INSERT INTO " + table + " (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(tuple+", ", end-start), ", ")
		if _, err := db.Bun().NewRaw(query, args...).Exec(t.Context()); err != nil {
			t.Fatalf("load %s: %v", table, err)
		}
	}
}
