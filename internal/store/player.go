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
	return &PlayerStore{playerQ: playerQ{idb: db.bun, db: db.bun, dialect: db.dialect}, db: db}
}

// InTx implements player.Store.
func (s *PlayerStore) InTx(ctx context.Context, fn func(ctx context.Context, tx player.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, playerQ{idb: tx, db: s.db.bun, dialect: s.db.dialect})
	})
}

// playerQ runs the player queries on a DB or inside a transaction.
type playerQ struct {
	idb     bun.IDB
	db      *bun.DB // scans rows of either
	dialect string
}

// scan runs a read and scans its rows into dest. On PostgreSQL the values
// travel as bind parameters instead of being inlined by bun, so pgx's
// per-connection statement cache lets the server reuse the plan of the hot
// statements (the lobby list spent longer planning than running).
func (q playerQ) scan(ctx context.Context, dest any, query string, args ...any) error {
	if q.dialect != Postgres {
		return q.idb.NewRaw(query, args...).Scan(ctx, dest)
	}
	query = numberPlaceholders(query)
	var (
		rows *sql.Rows
		err  error
	)
	switch db := q.idb.(type) {
	case *bun.DB:
		rows, err = db.DB.QueryContext(ctx, query, args...)
	case bun.Tx:
		rows, err = db.Tx.QueryContext(ctx, query, args...)
	default:
		return q.idb.NewRaw(query, args...).Scan(ctx, dest)
	}
	if err != nil {
		return mapError(err)
	}
	return mapError(q.db.ScanRows(ctx, rows, dest))
}

// numberPlaceholders turns ? into PostgreSQL's $1, $2, … The player
// queries hold no ? inside string literals.
func numberPlaceholders(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

var _ player.Tx = playerQ{}

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

type deckRow struct {
	ID        uuid.UUID `bun:"id"`
	UserID    uuid.UUID `bun:"user_id"`
	Name      string    `bun:"name"`
	Code      string    `bun:"code"`
	Source    string    `bun:"source"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

func (q playerQ) Decks(ctx context.Context, userID uuid.UUID) ([]player.DeckRow, error) {
	var rows []deckRow
	err := q.scan(ctx, &rows, "SELECT id, user_id, name, code, source, created_at, updated_at FROM player_decks WHERE user_id = ? ORDER BY created_at, id", userID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	out := make([]player.DeckRow, len(rows))
	for i, r := range rows {
		out[i] = player.DeckRow(r)
	}
	return out, nil
}

func (q playerQ) Edge(ctx context.Context, from, to uuid.UUID) (string, error) {
	var state string
	err := q.idb.NewRaw("SELECT state FROM social_edges WHERE user_id = ? AND other_id = ?", from, to).Scan(ctx, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return player.StateNone, nil
	}
	return state, mapError(err)
}

type edgeRow struct {
	playerRefRow
	State string    `bun:"state"`
	Since time.Time `bun:"since"`
}

func (q playerQ) Edges(ctx context.Context, userID uuid.UUID) ([]player.Edge, error) {
	var rows []edgeRow
	err := q.scan(ctx, &rows, `SELECT u.id, u.nickname, u.name, u.image, e.state, e.since
		FROM social_edges e JOIN users u ON u.id = e.other_id
		WHERE e.user_id = ? ORDER BY e.since DESC, u.id`, userID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	out := make([]player.Edge, len(rows))
	for i, r := range rows {
		out[i] = player.Edge{Other: r.ref(), State: r.State, Since: r.Since.UTC()}
	}
	return out, nil
}

func (q playerQ) CountEdges(ctx context.Context, userID uuid.UUID, state string) (int, error) {
	var n int
	err := q.idb.NewRaw("SELECT COUNT(*) FROM social_edges WHERE user_id = ? AND state = ?", userID, state).Scan(ctx, &n)
	return n, mapError(err)
}

func (q playerQ) EdgeCounts(ctx context.Context, userID uuid.UUID) (map[string]int, error) {
	var rows []struct {
		State string `bun:"state"`
		N     int    `bun:"n"`
	}
	err := q.idb.NewRaw("SELECT state, COUNT(*) AS n FROM social_edges WHERE user_id = ? GROUP BY state", userID).Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

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

const lobbyColumns = "l.id, l.join_code, l.queue_id, l.visibility, l.status, l.host_id, l.capacity, l.member_count, " +
	"l.created_at, l.updated_at, l.active_at, l.closed_at, l.close_reason"

type lobbyRow struct {
	ID          uuid.UUID  `bun:"id"`
	JoinCode    *string    `bun:"join_code"`
	QueueID     string     `bun:"queue_id"`
	Visibility  string     `bun:"visibility"`
	Status      string     `bun:"status"`
	HostID      uuid.UUID  `bun:"host_id"`
	Capacity    int        `bun:"capacity"`
	MemberCount int        `bun:"member_count"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
	ActiveAt    time.Time  `bun:"active_at"`
	ClosedAt    *time.Time `bun:"closed_at"`
	CloseReason string     `bun:"close_reason"`
}

func (r *lobbyRow) lobby() *player.LobbyRow {
	l := player.LobbyRow(*r)
	l.CreatedAt, l.UpdatedAt, l.ActiveAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC(), l.ActiveAt.UTC()
	if l.ClosedAt != nil {
		t := l.ClosedAt.UTC()
		l.ClosedAt = &t
	}
	return &l
}

func (q playerQ) lobbyWhere(ctx context.Context, suffix, where string, args ...any) (*player.LobbyRow, error) {
	var r lobbyRow
	if err := q.idb.NewRaw("SELECT "+lobbyColumns+" FROM lobbies l WHERE "+where+suffix, args...).Scan(ctx, &r); err != nil {
		return nil, notFound(err)
	}
	return r.lobby(), nil
}

func (q playerQ) Lobby(ctx context.Context, id uuid.UUID) (*player.LobbyRow, error) {
	return q.lobbyWhere(ctx, "", "l.id = ?", id)
}

func (q playerQ) LobbyByCode(ctx context.Context, code string) (*player.LobbyRow, error) {
	return q.lobbyWhere(ctx, "", "l.join_code = ?", code)
}

func (q playerQ) Members(ctx context.Context, lobbyID uuid.UUID) ([]player.MemberRow, error) {
	var rows []memberRow
	err := q.scan(ctx, &rows, `SELECT u.id, u.nickname, u.name, u.image, m.lobby_id, m.ready, m.joined_at
		FROM lobby_members m JOIN users u ON u.id = m.user_id
		WHERE m.lobby_id = ? ORDER BY m.joined_at, m.user_id`, lobbyID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	out := make([]player.MemberRow, len(rows))
	for i, r := range rows {
		out[i] = r.member()
	}
	return out, nil
}

type listingRow struct {
	lobbyRow
	HostNickname *string `bun:"host_nickname"`
	HostName     string  `bun:"host_name"`
	HostImage    *string `bun:"host_image"`
}

// ListLobbies applies the visibility rule of player.Service.visible in SQL:
// open, not idle, not full, public or hosted by a friend, no block either
// way, and not the viewer's own lobby.
func (q playerQ) ListLobbies(ctx context.Context, f player.LobbyFilter) ([]player.LobbyListing, error) {
	var rows []listingRow
	args := []any{f.ActiveMin, f.Viewer, f.Viewer, f.Viewer, f.Viewer}
	queue := ""
	if f.Queue != "" {
		queue = " AND l.queue_id = ?"
		args = append(args, f.Queue)
	}
	args = append(args, f.Limit)
	err := q.scan(ctx, &rows, `SELECT `+lobbyColumns+`, u.nickname AS host_nickname, u.name AS host_name, u.image AS host_image
		FROM lobbies l JOIN users u ON u.id = l.host_id
		WHERE l.status = 'open' AND l.active_at >= ? AND l.member_count < l.capacity
		AND (l.visibility = 'public' OR (l.visibility = 'friends' AND EXISTS (
			SELECT 1 FROM social_edges f WHERE f.user_id = ? AND f.other_id = l.host_id AND f.state = 'friend')))
		AND NOT EXISTS (SELECT 1 FROM social_edges b WHERE b.state = 'blocked'
			AND ((b.user_id = ? AND b.other_id = l.host_id) OR (b.user_id = l.host_id AND b.other_id = ?)))
		AND NOT EXISTS (SELECT 1 FROM lobby_members m WHERE m.lobby_id = l.id AND m.user_id = ?)`+queue+`
		ORDER BY l.created_at DESC, l.id LIMIT ?`, args...)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	out := make([]player.LobbyListing, len(rows))
	for i, r := range rows {
		host := playerRefRow{ID: r.HostID, Nickname: r.HostNickname, Name: r.HostName, Image: r.HostImage}
		out[i] = player.LobbyListing{LobbyRow: *r.lobby(), Host: host.ref()}
	}
	return out, nil
}

func (q playerQ) EnsureProfiles(ctx context.Context, now time.Time, ids ...uuid.UUID) error {
	for _, id := range ids {
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
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	var got []uuid.UUID
	err := q.idb.NewRaw("SELECT user_id FROM player_profiles WHERE user_id IN (?) ORDER BY user_id FOR UPDATE", bun.In(sorted)).Scan(ctx, &got)
	return mapError(err)
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

type playerStateRow struct {
	CatalogVersion     *int       `bun:"catalog_version"`
	CatalogETag        *string    `bun:"catalog_etag"`
	CatalogPublishedAt *time.Time `bun:"catalog_published_at"`
	LiveOpsVersion     *int       `bun:"liveops_version"`
	ProfileUserID      *uuid.UUID `bun:"profile_user_id"`
	DefaultDeckID      *uuid.UUID `bun:"default_deck_id"`
	StarterGranted     *bool      `bun:"starter_granted"`
	Friends            int        `bun:"friends"`
	Incoming           int        `bun:"incoming"`
	Outgoing           int        `bun:"outgoing"`
	Blocked            int        `bun:"blocked"`
	LobbyID            *uuid.UUID `bun:"lobby_id"`
}

// PlayerState reads the versions, the profile, the relationship counts and
// the lobby id in one statement: the bootstrap's first round trip.
func (q playerQ) PlayerState(ctx context.Context, userID uuid.UUID) (*player.PlayerState, error) {
	var rows []playerStateRow
	err := q.scan(ctx, &rows, `SELECT c.version AS catalog_version, c.etag AS catalog_etag, c.published_at AS catalog_published_at,
		(SELECT version FROM liveops_configs ORDER BY version DESC LIMIT 1) AS liveops_version,
		p.user_id AS profile_user_id, p.default_deck_id, p.starter_granted,
		(SELECT COUNT(*) FROM social_edges WHERE user_id = ? AND state = 'friend') AS friends,
		(SELECT COUNT(*) FROM social_edges WHERE user_id = ? AND state = 'incoming') AS incoming,
		(SELECT COUNT(*) FROM social_edges WHERE user_id = ? AND state = 'outgoing') AS outgoing,
		(SELECT COUNT(*) FROM social_edges WHERE user_id = ? AND state = 'blocked') AS blocked,
		(SELECT lobby_id FROM lobby_members WHERE user_id = ?) AS lobby_id
		FROM (SELECT 1 AS one) one
		LEFT JOIN (SELECT version, etag, published_at FROM content_catalogs ORDER BY version DESC LIMIT 1) c ON 1 = 1
		LEFT JOIN player_profiles p ON p.user_id = ?`,
		userID, userID, userID, userID, userID, userID)
	if err != nil {
		return nil, mapError(err)
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("player state: %d rows", len(rows))
	}
	r := rows[0]
	st := &player.PlayerState{LobbyID: r.LobbyID, EdgeCounts: map[string]int{
		player.StateFriend: r.Friends, player.StateIncoming: r.Incoming, player.StateOutgoing: r.Outgoing, player.StateBlocked: r.Blocked}}
	if r.CatalogVersion != nil {
		st.Catalog = &player.CatalogHead{Version: *r.CatalogVersion, ETag: *r.CatalogETag, PublishedAt: r.CatalogPublishedAt.UTC()}
	}
	if r.LiveOpsVersion != nil {
		st.LiveOpsVersion = *r.LiveOpsVersion
	}
	if r.ProfileUserID != nil {
		st.Profile = &player.Profile{UserID: *r.ProfileUserID, DefaultDeckID: r.DefaultDeckID, StarterGranted: r.StarterGranted != nil && *r.StarterGranted}
	}
	return st, nil
}

type lobbyMemberRow struct {
	lobbyRow
	MemberID       *uuid.UUID `bun:"member_id"`
	MemberNickname *string    `bun:"member_nickname"`
	MemberName     *string    `bun:"member_name"`
	MemberImage    *string    `bun:"member_image"`
	Ready          *bool      `bun:"ready"`
	JoinedAt       *time.Time `bun:"joined_at"`
}

// CurrentLobbyOf reads the player's lobby with its members in one
// statement.
func (q playerQ) CurrentLobbyOf(ctx context.Context, userID uuid.UUID) (*player.LobbyRow, []player.MemberRow, error) {
	var rows []lobbyMemberRow
	err := q.scan(ctx, &rows, `SELECT `+lobbyColumns+`, u.id AS member_id, u.nickname AS member_nickname, u.name AS member_name,
		u.image AS member_image, m.ready, m.joined_at
		FROM lobby_members me JOIN lobbies l ON l.id = me.lobby_id
		LEFT JOIN lobby_members m ON m.lobby_id = l.id LEFT JOIN users u ON u.id = m.user_id
		WHERE me.user_id = ? ORDER BY m.joined_at, m.user_id`, userID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, mapError(err)
	}
	if len(rows) == 0 {
		return nil, nil, player.ErrNotFound
	}
	l := rows[0].lobby()
	members := make([]player.MemberRow, 0, len(rows))
	for _, r := range rows {
		if r.MemberID == nil {
			continue
		}
		ref := playerRefRow{ID: *r.MemberID, Nickname: r.MemberNickname, Image: r.MemberImage}
		if r.MemberName != nil {
			ref.Name = *r.MemberName
		}
		members = append(members, player.MemberRow{LobbyID: l.ID, Player: ref.ref(), Ready: r.Ready != nil && *r.Ready, JoinedAt: r.JoinedAt.UTC()})
	}
	return l, members, nil
}

func (q playerQ) PurgeClosedLobbies(ctx context.Context, before time.Time) (int, error) {
	res, err := q.idb.NewRaw("DELETE FROM lobbies WHERE status = 'closed' AND closed_at < ?", before).Exec(ctx)
	if err != nil {
		return 0, mapError(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
