package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/player"
)

// PlayerState reads a bootstrap's state in one statement: a UNION ALL of
// one state row (versions, profile, counts), one row per deck and one row
// per member of the player's lobby (playerStateQuery). Every row is
// scanned into the same stateRow, and its kind says what to copy out.
func (q playerQ) PlayerState(ctx context.Context, userID uuid.UUID) (*player.PlayerState, error) {
	st := &player.PlayerState{}
	args := make([]any, playerStateParams)
	var id any = userID // boxed once for every placeholder
	for i := range args {
		args[i] = id
	}
	var (
		r     stateRow
		found bool
	)
	dest := r.dest()
	err := q.each(ctx, func(rows rowScanner) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		found = found || r.kind == "state"
		r.addTo(st, userID)
		return nil
	}, playerStateQuery, args...)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("player state: no state row")
	}
	// UNION ALL promises no order, so the order is restored here.
	sortDecks(st.Decks)
	sortMembers(st.Members)
	return st, nil
}

// edgeStates are the relationship states the state row counts, in column
// order.
var edgeStates = [...]string{player.StateFriend, player.StateIncoming, player.StateOutgoing, player.StateBlocked}

// playerStateLayout is the column layout of PlayerState's UNION ALL after
// its kind column: one group of columns per kind of row, in the order
// stateRow.dest scans them.
var playerStateLayout = []columnGroup{
	{"state", slices.Concat([]column{
		{"c.version", "integer"}, {"c.etag", "text"}, {"c.published_at", "timestamptz"},
		{"(SELECT version FROM liveops_configs ORDER BY version DESC LIMIT 1)", "integer"},
		{"p.user_id", "uuid"}, {"p.default_deck_id", "uuid"}, {"p.starter_granted", "boolean"},
	}, edgeCountCols())},
	{"deck", []column{
		{"d.id", "uuid"}, {"d.name", "text"}, {"d.code", "text"}, {"d.source", "text"},
		{"d.created_at", "timestamptz"}, {"d.updated_at", "timestamptz"},
	}},
	{"lobby", lobbyCols},
	{"member", []column{
		{"u.id", "uuid"}, {"u.nickname", "text"}, {"u.name", "text"}, {"u.image", "text"},
		{"m.ready", "boolean"}, {"m.joined_at", "timestamptz"},
	}},
}

// edgeCountCols counts the player's relationships in each of edgeStates.
func edgeCountCols() []column {
	cols := make([]column, len(edgeStates))
	for i, s := range edgeStates {
		cols[i] = column{"(SELECT COUNT(*) FROM social_edges WHERE user_id = ? AND state = '" + s + "')", "bigint"}
	}
	return cols
}

// playerStateQuery is PlayerState's statement, built once. Each branch
// fills the groups of playerStateLayout named after its kind.
var playerStateQuery = unionAll(playerStateLayout,
	unionBranch{kind: "state", fills: []string{"state"}, from: `FROM (SELECT 1 AS one) one
		LEFT JOIN (SELECT version, etag, published_at FROM content_catalogs ORDER BY version DESC LIMIT 1) c ON 1 = 1
		LEFT JOIN player_profiles p ON p.user_id = ?`},
	unionBranch{kind: "deck", fills: []string{"deck"}, from: `FROM player_decks d WHERE d.user_id = ?`},
	unionBranch{kind: "member", fills: []string{"lobby", "member"}, from: `FROM lobby_members me JOIN lobbies l ON l.id = me.lobby_id
		LEFT JOIN lobby_members m ON m.lobby_id = l.id LEFT JOIN users u ON u.id = m.user_id
		WHERE me.user_id = ?`},
)

// playerStateParams is the number of placeholders in playerStateQuery;
// every one of them takes the player's id.
var playerStateParams = strings.Count(playerStateQuery, "?")

// stateRow is one row of PlayerState's UNION ALL. Its destinations are
// made once and reused for every row: each one clears on NULL, so a row
// leaves nothing behind for the next one, and each kind of row copies out
// only the columns it fills.
type stateRow struct {
	kind string

	catVersion, liveVersion sql.NullInt64
	catETag                 string
	catPublished            time.Time
	profileID               uuid.UUID // uuid.Nil when the player has no profile yet
	defaultDeck             *uuid.UUID
	starter                 sql.NullBool
	edgeCounts              [len(edgeStates)]sql.NullInt64

	deck player.DeckRow

	lobby                 player.LobbyRow
	capacity, memberCount sql.NullInt64 // the lobby's; NULL in the other kinds of row

	member player.MemberRow
	ready  sql.NullBool
}

// dest lists the scan destinations of a row, in playerStateLayout order.
func (r *stateRow) dest() []any {
	d, l, m := &r.deck, &r.lobby, &r.member
	dest := []any{&r.kind,
		&r.catVersion, emptyString{&r.catETag}, dbTime{&r.catPublished}, &r.liveVersion,
		dbUUID{&r.profileID}, nullUUID{&r.defaultDeck}, &r.starter}
	for i := range r.edgeCounts {
		dest = append(dest, &r.edgeCounts[i])
	}
	return append(dest,
		dbUUID{&d.ID}, emptyString{&d.Name}, emptyString{&d.Code}, emptyString{&d.Source}, dbTime{&d.CreatedAt}, dbTime{&d.UpdatedAt},
		dbUUID{&l.ID}, nullString{&l.JoinCode}, emptyString{&l.QueueID}, emptyString{&l.Visibility}, emptyString{&l.Status},
		dbUUID{&l.HostID}, &r.capacity, &r.memberCount,
		dbTime{&l.CreatedAt}, dbTime{&l.UpdatedAt}, dbTime{&l.ActiveAt}, nullTime{&l.ClosedAt}, emptyString{&l.CloseReason},
		dbUUID{&m.Player.ID}, emptyString{&m.Player.Nickname}, emptyString{&m.Player.Name}, nullString{&m.Player.Image},
		&r.ready, dbTime{&m.JoinedAt})
}

// addTo copies the row into st, as its kind says.
func (r *stateRow) addTo(st *player.PlayerState, userID uuid.UUID) {
	switch r.kind {
	case "state":
		r.addState(st)
	case "deck":
		d := r.deck
		d.UserID = userID
		st.Decks = append(st.Decks, d)
	case "member":
		r.addMember(st)
	}
}

func (r *stateRow) addState(st *player.PlayerState) {
	st.EdgeCounts = make(map[string]int, len(edgeStates))
	for i, s := range edgeStates {
		st.EdgeCounts[s] = int(r.edgeCounts[i].Int64)
	}
	if r.catVersion.Valid {
		st.Catalog = &player.CatalogHead{Version: int(r.catVersion.Int64), ETag: r.catETag, PublishedAt: r.catPublished}
	}
	st.LiveOpsVersion = int(r.liveVersion.Int64)
	if r.profileID != uuid.Nil {
		st.Profile = &player.Profile{UserID: r.profileID, DefaultDeckID: r.defaultDeck, StarterGranted: r.starter.Bool}
	}
}

// addMember sets the lobby from the first member row, and adds the
// member, if the outer join found one.
func (r *stateRow) addMember(st *player.PlayerState) {
	if st.Lobby == nil {
		l := r.lobby
		l.Capacity, l.MemberCount = int(r.capacity.Int64), int(r.memberCount.Int64)
		st.Lobby = &l
	}
	if r.member.Player.ID == uuid.Nil {
		return
	}
	m := r.member
	m.LobbyID, m.Ready = r.lobby.ID, r.ready.Bool
	st.Members = append(st.Members, m)
}

// sortDecks sorts decks by creation, then id.
func sortDecks(ds []player.DeckRow) {
	slices.SortFunc(ds, func(a, b player.DeckRow) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
}

// sortMembers sorts members by joining time, then id.
func sortMembers(ms []player.MemberRow) {
	slices.SortFunc(ms, func(a, b player.MemberRow) int {
		if c := a.JoinedAt.Compare(b.JoinedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Player.ID.String(), b.Player.ID.String())
	})
}

// column is one column of a select list: the expression that reads it,
// and its PostgreSQL type.
type column struct{ expr, typ string }

// columnGroup is the columns one kind of row of a UNION ALL fills.
type columnGroup struct {
	name string
	cols []column
}

// unionBranch is one SELECT of a UNION ALL: its kind of row, the groups of
// columns it fills, and the rest of the statement after the select list.
type unionBranch struct {
	kind  string
	fills []string
	from  string
}

// unionAll builds a UNION ALL whose kinds of row each fill their own
// groups of columns. Every branch selects its kind, then every column of
// layout in order: its own, or NULL for the groups it leaves to the
// others. The first branch casts those NULLs to the columns' types:
// PostgreSQL resolves the column types of chained UNIONs pair by pair and
// would otherwise settle two untyped NULLs on text. SQLite reads every
// such cast as NULL.
func unionAll(layout []columnGroup, branches ...unionBranch) string {
	parts := make([]string, len(branches))
	for i, br := range branches {
		list, filled := []string{"'" + br.kind + "' AS kind"}, 0
		for _, g := range layout {
			fills := slices.Contains(br.fills, g.name)
			if fills {
				filled++
			}
			for _, c := range g.cols {
				switch {
				case fills:
					list = append(list, c.expr)
				case i == 0:
					list = append(list, "CAST(NULL AS "+c.typ+")")
				default:
					list = append(list, "NULL")
				}
			}
		}
		if filled != len(br.fills) {
			panic(fmt.Sprintf("store: branch %q fills groups %v not all in its layout", br.kind, br.fills))
		}
		parts[i] = "SELECT " + strings.Join(list, ", ") + "\n\t\t" + br.from
	}
	return strings.Join(parts, "\n\t\tUNION ALL\n\t\t")
}

// selectList joins the expressions of cols into a select list.
func selectList(cols []column) string {
	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = c.expr
	}
	return strings.Join(exprs, ", ")
}
