package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/player"
)

// PlayerStore implements player.Store.
type PlayerStore struct {
	playerQ
	db *DB
}

// Player returns the player store.
func (db *DB) Player() *PlayerStore {
	return &PlayerStore{playerQ: db.on(db.bun).playerQ, db: db}
}

// InTx implements player.Store with DB.InTx, so fn may run more than once.
func (s *PlayerStore) InTx(ctx context.Context, fn func(ctx context.Context, tx player.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// playerQ is the player area's queries of Tx: it runs them on a DB or
// inside a transaction.
type playerQ struct {
	idb bun.IDB
	rawQ
}

// notFound maps sql.ErrNoRows to player.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return player.ErrNotFound
	}
	return mapError(err)
}

func (q playerQ) CatalogHead(ctx context.Context) (*player.CatalogHead, error) {
	var h player.CatalogHead
	err := q.idb.NewRaw("SELECT version, etag, published_at FROM content_catalogs ORDER BY version DESC LIMIT 1").
		Scan(ctx, &h.Version, &h.ETag, &h.PublishedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapError(err)
	}
	h.PublishedAt = h.PublishedAt.UTC()
	return &h, nil
}

func (q playerQ) CatalogContent(ctx context.Context, version int) (*player.Content, error) {
	var body string
	if err := q.idb.NewRaw("SELECT body FROM content_catalogs WHERE version = ?", version).Scan(ctx, &body); err != nil {
		return nil, notFound(err)
	}
	var c player.Content
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		return nil, fmt.Errorf("catalog %d body: %w", version, err)
	}
	return &c, nil
}

type playerRefRow struct {
	ID       uuid.UUID `bun:"id"`
	Nickname *string   `bun:"nickname"`
	Name     string    `bun:"name"`
	Image    *string   `bun:"image"`
}

func (r playerRefRow) ref() player.PlayerRef {
	p := player.PlayerRef{ID: r.ID, Name: r.Name, Image: r.Image}
	if r.Nickname != nil {
		p.Nickname = *r.Nickname
	}
	return p
}

func (q playerQ) PlayerByID(ctx context.Context, id uuid.UUID) (*player.PlayerRef, error) {
	var r playerRefRow
	if err := q.idb.NewRaw("SELECT id, nickname, name, image FROM users WHERE id = ? AND realm = 'player'", id).Scan(ctx, &r); err != nil {
		return nil, notFound(err)
	}
	p := r.ref()
	return &p, nil
}

func (q playerQ) PlayerByNickname(ctx context.Context, nicknameKey string) (*player.PlayerRef, error) {
	var r playerRefRow
	if err := q.idb.NewRaw("SELECT id, nickname, name, image FROM users WHERE nickname_key = ? AND realm = 'player'", nicknameKey).Scan(ctx, &r); err != nil {
		return nil, notFound(err)
	}
	p := r.ref()
	return &p, nil
}

func (q playerQ) Profile(ctx context.Context, userID uuid.UUID) (*player.Profile, error) {
	var p player.Profile
	err := q.idb.NewRaw("SELECT user_id, default_deck_id, starter_granted FROM player_profiles WHERE user_id = ?", userID).
		Scan(ctx, &p.UserID, &p.DefaultDeckID, &p.StarterGranted)
	if err != nil {
		return nil, notFound(err)
	}
	return &p, nil
}

func (q playerQ) Decks(ctx context.Context, userID uuid.UUID) ([]player.DeckRow, error) {
	out := make([]player.DeckRow, 0, 8)
	err := q.each(ctx, func(rows rowScanner) error {
		var d player.DeckRow
		err := rows.Scan(dbUUID{&d.ID}, dbUUID{&d.UserID}, &d.Name, &d.Code, &d.Source, dbTime{&d.CreatedAt}, dbTime{&d.UpdatedAt})
		out = append(out, d)
		return err
	}, "SELECT id, user_id, name, code, source, created_at, updated_at FROM player_decks WHERE user_id = ? ORDER BY created_at, id", userID)
	return out, err
}

func (q playerQ) Edge(ctx context.Context, from, to uuid.UUID) (string, error) {
	var state string
	err := q.idb.NewRaw("SELECT state FROM social_edges WHERE user_id = ? AND other_id = ?", from, to).Scan(ctx, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return player.StateNone, nil
	}
	return state, mapError(err)
}

// EdgePages reads every page in one statement (edgePagesSQL).
func (q playerQ) EdgePages(ctx context.Context, userID uuid.UUID, pages []player.EdgePage) ([]player.Edge, error) {
	out := make([]player.Edge, 0, 64)
	if len(pages) == 0 {
		return out, nil
	}
	query, args := edgePagesSQL(userID, pages)
	err := q.each(ctx, func(rows rowScanner) error {
		var e player.Edge
		err := rows.Scan(append(refDest(&e.Other), &e.State, dbTime{&e.Since})...)
		out = append(out, e)
		return err
	}, query, args...)
	return out, err
}

// edgePagesSQL is a UNION ALL of keyset reads, one per page, that each
// stop at their LIMIT on social_edges_user_state_idx, joined to the users
// shown.
func edgePagesSQL(userID uuid.UUID, pages []player.EdgePage) (string, []any) {
	branches := make([]string, len(pages))
	var args []any
	for i, p := range pages {
		after := ""
		args = append(args, userID, p.State)
		if p.After != nil {
			after = " AND (e.since < ? OR (e.since = ? AND e.other_id > ?))"
			args = append(args, p.After.Since.UTC(), p.After.Since.UTC(), p.After.Other)
		}
		args = append(args, p.Limit)
		branches[i] = `SELECT * FROM (SELECT e.other_id, e.state, e.since FROM social_edges e
			WHERE e.user_id = ? AND e.state = ?` + after + ` ORDER BY e.since DESC, e.other_id LIMIT ?) p` + strconv.Itoa(i)
	}
	return `SELECT u.id, u.nickname, u.name, u.image, page.state, page.since
		FROM (` + strings.Join(branches, " UNION ALL ") + `) page JOIN users u ON u.id = page.other_id`, args
}

// refDest lists the scan destinations of the columns id, nickname, name,
// image of users.
func refDest(p *player.PlayerRef) []any {
	return []any{dbUUID{&p.ID}, emptyString{&p.Nickname}, &p.Name, nullString{&p.Image}}
}

// lobbyDest lists the scan destinations of lobbyColumns.
func lobbyDest(l *player.LobbyRow) []any {
	return []any{dbUUID{&l.ID}, nullString{&l.JoinCode}, &l.QueueID, &l.Visibility, &l.Status, dbUUID{&l.HostID}, &l.Capacity, &l.MemberCount,
		dbTime{&l.CreatedAt}, dbTime{&l.UpdatedAt}, dbTime{&l.ActiveAt}, nullTime{&l.ClosedAt}, &l.CloseReason}
}

func (q playerQ) CountEdges(ctx context.Context, userID uuid.UUID, state string) (int, error) {
	var n int
	err := q.idb.NewRaw("SELECT COUNT(*) FROM social_edges WHERE user_id = ? AND state = ?", userID, state).Scan(ctx, &n)
	return n, mapError(err)
}

// EdgeCounts counts the player's relationships by state in one
// index-only pass. Every social page asks for them, so the player's id is
// sent as a parameter (rawQ.each), not written into the text.
func (q playerQ) EdgeCounts(ctx context.Context, userID uuid.UUID) (map[string]int, error) {
	out := make(map[string]int, len(edgeStates))
	var (
		state string
		n     int
	)
	err := q.each(ctx, func(row rowScanner) error {
		if err := row.Scan(&state, &n); err != nil {
			return err
		}
		out[state] = n
		return nil
	}, edgeCountsSQL, userID)
	return out, err
}

const edgeCountsSQL = "SELECT state, COUNT(*) AS n FROM social_edges WHERE user_id = ? GROUP BY state"

type memberRow struct {
	playerRefRow
	LobbyID  uuid.UUID `bun:"lobby_id"`
	Ready    bool      `bun:"ready"`
	JoinedAt time.Time `bun:"joined_at"`
}

func (r memberRow) member() player.MemberRow {
	return player.MemberRow{LobbyID: r.LobbyID, Player: r.ref(), Ready: r.Ready, JoinedAt: r.JoinedAt.UTC()}
}

func (q playerQ) MembershipOf(ctx context.Context, userID uuid.UUID) (*player.MemberRow, error) {
	var r memberRow
	err := q.idb.NewRaw("SELECT user_id AS id, lobby_id, ready, joined_at FROM lobby_members WHERE user_id = ?", userID).Scan(ctx, &r)
	if err != nil {
		return nil, notFound(err)
	}
	m := r.member()
	return &m, nil
}

// lobbyCols are the columns of a lobby row, in lobbyDest order, with their
// PostgreSQL types.
var lobbyCols = []column{
	{"l.id", "uuid"}, {"l.join_code", "text"}, {"l.queue_id", "text"}, {"l.visibility", "text"}, {"l.status", "text"},
	{"l.host_id", "uuid"}, {"l.capacity", "integer"}, {"l.member_count", "integer"},
	{"l.created_at", "timestamptz"}, {"l.updated_at", "timestamptz"}, {"l.active_at", "timestamptz"},
	{"l.closed_at", "timestamptz"}, {"l.close_reason", "text"},
}

// lobbyColumns is the select list of lobbyCols.
var lobbyColumns = selectList(lobbyCols)

// listedColumns are lobbyColumns for a lobby listed to players outside it:
// its join code stays in the database.
var listedColumns = strings.Replace(lobbyColumns, "l.join_code", "NULL", 1)

func (q playerQ) lobbyWhere(ctx context.Context, suffix, where string, args ...any) (*player.LobbyRow, error) {
	var l *player.LobbyRow
	err := q.each(ctx, func(rows rowScanner) error {
		l = &player.LobbyRow{}
		return rows.Scan(lobbyDest(l)...)
	}, "SELECT "+lobbyColumns+" FROM lobbies l WHERE "+where+suffix, args...)
	if err == nil && l == nil {
		err = player.ErrNotFound
	}
	return l, err
}

func (q playerQ) Lobby(ctx context.Context, id uuid.UUID) (*player.LobbyRow, error) {
	return q.lobbyWhere(ctx, "", "l.id = ?", id)
}

func (q playerQ) LobbyByCode(ctx context.Context, code string) (*player.LobbyRow, error) {
	return q.lobbyWhere(ctx, "", "l.join_code = ?", code)
}

func (q playerQ) Members(ctx context.Context, lobbyID uuid.UUID) ([]player.MemberRow, error) {
	out := make([]player.MemberRow, 0, 8)
	err := q.each(ctx, func(rows rowScanner) error {
		var m player.MemberRow
		err := rows.Scan(append(refDest(&m.Player), dbUUID{&m.LobbyID}, &m.Ready, dbTime{&m.JoinedAt})...)
		out = append(out, m)
		return err
	}, `SELECT u.id, u.nickname, u.name, u.image, m.lobby_id, m.ready, m.joined_at
		FROM lobby_members m JOIN users u ON u.id = m.user_id
		WHERE m.lobby_id = ? ORDER BY m.joined_at, m.user_id`, lobbyID)
	return out, err
}

// BrowseLobbies reads the lobby browser in one statement
// (browseLobbiesSQL): the joinable lobbies, and the viewer's own lobby
// with its members. The viewer's own lobby is not listed either; rather
// than a third subplan, the page is read one lobby longer and the lobby of
// the second part is dropped from it here.
func (q playerQ) BrowseLobbies(ctx context.Context, f player.LobbyFilter) (*player.LobbyBrowse, error) {
	out := &player.LobbyBrowse{Listings: make([]player.LobbyListing, 0, f.Limit+1)}
	var own uuid.UUID // the viewer's lobby, if any
	// One set of destinations serves every row; each row is copied out.
	var (
		kind   string
		l      player.LobbyRow
		person player.PlayerRef
		ready  sql.NullBool
		joined time.Time
	)
	dest := append(append([]any{&kind}, lobbyDest(&l)...), dbUUID{&person.ID}, emptyString{&person.Nickname},
		emptyString{&person.Name}, nullString{&person.Image}, &ready, dbTime{&joined})
	query, args := browseLobbiesSQL(f)
	err := q.each(ctx, func(rows rowScanner) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if kind == "listed" {
			out.Listings = append(out.Listings, player.LobbyListing{LobbyRow: l, Host: person})
			return nil
		}
		own = l.ID
		if person.ID == uuid.Nil {
			return nil
		}
		if out.Current == nil {
			current := l
			out.Current = &current
		}
		out.Members = append(out.Members, player.MemberRow{LobbyID: l.ID, Player: person, Ready: ready.Bool, JoinedAt: joined})
		return nil
	}, query, args...)
	if err != nil {
		return nil, err
	}
	// UNION ALL promises no order, so the order is restored here.
	slices.SortFunc(out.Listings, func(a, b player.LobbyListing) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	out.Listings = slices.DeleteFunc(out.Listings, func(l player.LobbyListing) bool { return l.ID == own })
	out.Listings = out.Listings[:min(len(out.Listings), f.Limit)]
	sortMembers(out.Members)
	return out, nil
}

// browseLobbiesSQL is the lobby browser's statement. Its first part
// applies the visibility rule of player.Service.visible in SQL: open, not
// idle, not full, public or hosted by a friend, and no block either way.
// The viewer's friends and blocks are each read once (hashed subplans), so
// a lobby costs a few hash probes, and hosts are joined only for the page
// returned.
//
// The page is read in list order from lobbies_joinable_idx and stops at
// its LIMIT. The idle filter is written "(active_at >= ?) IS TRUE" so that
// PostgreSQL cannot turn it into a range scan of lobbies_live_idx: its
// statistics always lag behind the newest active_at values, so it would
// underestimate that range, read every live lobby and sort them.
func browseLobbiesSQL(f player.LobbyFilter) (string, []any) {
	args := []any{f.ActiveMin, f.Viewer, f.Viewer, f.Viewer}
	queue := ""
	if f.Queue != "" {
		queue = " AND l.queue_id = ?"
		args = append(args, f.Queue)
	}
	after := ""
	if f.After != nil {
		after = " AND (l.created_at < ? OR (l.created_at = ? AND l.id > ?))"
		args = append(args, f.After.Since.UTC(), f.After.Since.UTC(), f.After.Other)
	}
	args = append(args, f.Limit+1, f.Viewer)
	return `SELECT 'listed' AS kind, ` + listedColumns + `, u.id, u.nickname, u.name, u.image, NULL AS ready, NULL AS joined_at
		FROM (SELECT * FROM lobbies l
			WHERE l.status = 'open' AND (l.active_at >= ?) IS TRUE AND l.member_count < l.capacity
			AND (l.visibility = 'public' OR (l.visibility = 'friends' AND l.host_id IN (
				SELECT other_id FROM social_edges WHERE user_id = ? AND state = 'friend')))
			AND l.host_id NOT IN (SELECT other_id FROM social_edges WHERE user_id = ? AND state = 'blocked')
			AND l.host_id NOT IN (SELECT user_id FROM social_edges WHERE other_id = ? AND state = 'blocked')` + queue + after + `
			ORDER BY l.created_at DESC, l.id LIMIT ?) l
		JOIN users u ON u.id = l.host_id
		UNION ALL
		SELECT 'current' AS kind, ` + lobbyColumns + `, u.id, u.nickname, u.name, u.image, m.ready, m.joined_at
		FROM lobby_members me JOIN lobbies l ON l.id = me.lobby_id
		LEFT JOIN lobby_members m ON m.lobby_id = l.id LEFT JOIN users u ON u.id = m.user_id
		WHERE me.user_id = ?`, args
}

// EnsureProfiles inserts the missing rows in id order, the order
// LockProfiles locks them in: on PostgreSQL an insert holds the new row
// until commit, so two transactions inserting the same new rows in opposite
// orders would deadlock.
func (q playerQ) EnsureProfiles(ctx context.Context, now time.Time, ids ...uuid.UUID) error {
	for _, id := range sortedIDs(ids) {
		_, err := q.idb.NewRaw(`INSERT INTO player_profiles (user_id, starter_granted, created_at, updated_at)
			VALUES (?, FALSE, ?, ?) ON CONFLICT (user_id) DO NOTHING`, id, now, now).Exec(ctx)
		if err != nil {
			return mapError(err)
		}
	}
	return nil
}

// LockProfiles locks the rows in id order on PostgreSQL. SQLite runs one
// write transaction at a time (they begin IMMEDIATE), which is the lock.
func (q playerQ) LockProfiles(ctx context.Context, ids ...uuid.UUID) error {
	if q.dialect != Postgres {
		return nil
	}
	var got []uuid.UUID
	err := q.idb.NewRaw("SELECT user_id FROM player_profiles WHERE user_id IN (?) ORDER BY user_id FOR UPDATE", bun.List(sortedIDs(ids))).Scan(ctx, &got)
	return mapError(err)
}

// sortedIDs returns a sorted copy of ids.
func sortedIDs(ids []uuid.UUID) []uuid.UUID {
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	return sorted
}

func (q playerQ) GrantStarter(ctx context.Context, userID uuid.UUID, now time.Time) (bool, error) {
	res, err := q.idb.NewRaw("UPDATE player_profiles SET starter_granted = TRUE, updated_at = ? WHERE user_id = ? AND NOT starter_granted",
		now, userID).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (q playerQ) SetDefaultDeck(ctx context.Context, userID uuid.UUID, deckID *uuid.UUID, now time.Time) error {
	_, err := q.idb.NewRaw("UPDATE player_profiles SET default_deck_id = ?, updated_at = ? WHERE user_id = ?", deckID, now, userID).Exec(ctx)
	return mapError(err)
}

// affected turns an ON CONFLICT DO NOTHING insert that wrote nothing into
// player.ErrDuplicate. Skipping the row instead of failing keeps a
// PostgreSQL transaction usable after the conflict.
func affected(res sql.Result, err error) error {
	if err != nil {
		return mapError(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return player.ErrDuplicate
	}
	return nil
}

func (q playerQ) InsertDeck(ctx context.Context, d *player.DeckRow) error {
	return affected(q.idb.NewRaw(`INSERT INTO player_decks (id, user_id, name, code, source, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, code) DO NOTHING`,
		d.ID, d.UserID, d.Name, d.Code, d.Source, d.CreatedAt, d.UpdatedAt).Exec(ctx))
}

func (q playerQ) SetEdge(ctx context.Context, from, to uuid.UUID, state string, now time.Time) error {
	_, err := q.idb.NewRaw(`INSERT INTO social_edges (user_id, other_id, state, since) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, other_id) DO UPDATE SET state = excluded.state, since = excluded.since`,
		from, to, state, now).Exec(ctx)
	return mapError(err)
}

func (q playerQ) DeleteEdge(ctx context.Context, from, to uuid.UUID) error {
	_, err := q.idb.NewRaw("DELETE FROM social_edges WHERE user_id = ? AND other_id = ?", from, to).Exec(ctx)
	return mapError(err)
}

// LockLobby reads the lobby FOR UPDATE on PostgreSQL; on SQLite the write
// transaction already excludes every other writer.
func (q playerQ) LockLobby(ctx context.Context, id uuid.UUID) (*player.LobbyRow, error) {
	suffix := ""
	if q.dialect == Postgres {
		suffix = " FOR UPDATE"
	}
	return q.lobbyWhere(ctx, suffix, "l.id = ?", id)
}

func (q playerQ) InsertLobby(ctx context.Context, l *player.LobbyRow) error {
	return affected(q.idb.NewRaw(`INSERT INTO lobbies (id, join_code, queue_id, visibility, status, host_id, capacity,
		member_count, created_at, updated_at, active_at, closed_at, close_reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		l.ID, l.JoinCode, l.QueueID, l.Visibility, l.Status, l.HostID, l.Capacity, l.MemberCount,
		l.CreatedAt, l.UpdatedAt, l.ActiveAt, l.ClosedAt, l.CloseReason).Exec(ctx))
}

func (q playerQ) UpdateLobby(ctx context.Context, l *player.LobbyRow) error {
	_, err := q.idb.NewRaw(`UPDATE lobbies SET join_code = ?, status = ?, host_id = ?, member_count = ?,
		updated_at = ?, active_at = ?, closed_at = ?, close_reason = ? WHERE id = ?`,
		l.JoinCode, l.Status, l.HostID, l.MemberCount, l.UpdatedAt, l.ActiveAt, l.ClosedAt, l.CloseReason, l.ID).Exec(ctx)
	return mapError(err)
}

func (q playerQ) InsertMember(ctx context.Context, m *player.MemberRow) error {
	return affected(q.idb.NewRaw(`INSERT INTO lobby_members (user_id, lobby_id, ready, joined_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id) DO NOTHING`, m.Player.ID, m.LobbyID, m.Ready, m.JoinedAt).Exec(ctx))
}

func (q playerQ) DeleteMember(ctx context.Context, lobbyID, userID uuid.UUID) error {
	_, err := q.idb.NewRaw("DELETE FROM lobby_members WHERE lobby_id = ? AND user_id = ?", lobbyID, userID).Exec(ctx)
	return mapError(err)
}

func (q playerQ) DeleteMembers(ctx context.Context, lobbyID uuid.UUID) error {
	_, err := q.idb.NewRaw("DELETE FROM lobby_members WHERE lobby_id = ?", lobbyID).Exec(ctx)
	return mapError(err)
}

func (q playerQ) SetReady(ctx context.Context, lobbyID, userID uuid.UUID, ready bool) error {
	_, err := q.idb.NewRaw("UPDATE lobby_members SET ready = ? WHERE lobby_id = ? AND user_id = ?", ready, lobbyID, userID).Exec(ctx)
	return mapError(err)
}

func (q playerQ) IdleLobbies(ctx context.Context, before time.Time, limit int) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := q.idb.NewRaw("SELECT id FROM lobbies WHERE status <> 'closed' AND active_at < ? ORDER BY active_at LIMIT ?", before, limit).
		Scan(ctx, &ids)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	return ids, nil
}

// CurrentLobbyOf reads the player's lobby with its members in one
// statement.
func (q playerQ) CurrentLobbyOf(ctx context.Context, userID uuid.UUID) (*player.LobbyRow, []player.MemberRow, error) {
	return q.lobbyWithMembers(ctx, `FROM lobby_members me JOIN lobbies l ON l.id = me.lobby_id
		LEFT JOIN lobby_members m ON m.lobby_id = l.id LEFT JOIN users u ON u.id = m.user_id
		WHERE me.user_id = ?`, userID)
}

// LobbyWithMembers reads a lobby with its members in one statement, so
// that both come from the same committed state.
func (q playerQ) LobbyWithMembers(ctx context.Context, lobbyID uuid.UUID) (*player.LobbyRow, []player.MemberRow, error) {
	return q.lobbyWithMembers(ctx, `FROM lobbies l
		LEFT JOIN lobby_members m ON m.lobby_id = l.id LEFT JOIN users u ON u.id = m.user_id
		WHERE l.id = ?`, lobbyID)
}

// lobbyWithMembers reads one lobby (l) and its members (m, u) from the
// tables and condition of from: one row per member, or one row of nulls
// for the member columns of a lobby without members.
func (q playerQ) lobbyWithMembers(ctx context.Context, from string, arg any) (*player.LobbyRow, []player.MemberRow, error) {
	var (
		l       *player.LobbyRow
		members []player.MemberRow
	)
	err := q.each(ctx, func(rows rowScanner) error {
		var (
			row      player.LobbyRow
			id       *uuid.UUID
			nickname *string
			name     *string
			m        player.MemberRow
			ready    sql.NullBool
			joined   *time.Time
		)
		if err := rows.Scan(append(lobbyDest(&row), nullUUID{&id}, nullString{&nickname}, nullString{&name},
			nullString{&m.Player.Image}, &ready, nullTime{&joined})...); err != nil {
			return err
		}
		if l == nil {
			l = &row
		}
		if id == nil {
			return nil
		}
		m.LobbyID, m.Player.ID, m.Ready = l.ID, *id, ready.Bool
		if nickname != nil {
			m.Player.Nickname = *nickname
		}
		if name != nil {
			m.Player.Name = *name
		}
		if joined != nil {
			m.JoinedAt = *joined
		}
		members = append(members, m)
		return nil
	}, `SELECT `+lobbyColumns+`, u.id AS member_id, u.nickname AS member_nickname, u.name AS member_name,
		u.image AS member_image, m.ready, m.joined_at
		`+from+` ORDER BY m.joined_at, m.user_id`, arg)
	if err != nil {
		return nil, nil, err
	}
	if l == nil {
		return nil, nil, player.ErrNotFound
	}
	return l, members, nil
}
