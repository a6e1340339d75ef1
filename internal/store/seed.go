package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/seed"
)

// SeedStore implements seed.Store.
type SeedStore struct{ db *DB }

// Seed returns the fixture seeding store.
func (db *DB) Seed() *SeedStore { return &SeedStore{db: db} }

// seedLockKey is an arbitrary constant naming the seeding advisory lock.
const seedLockKey = 7_202_611_210_005

// Ledger implements seed.Store.
func (s *SeedStore) Ledger(ctx context.Context) (map[string]string, error) {
	return s.db.on(s.db.bun).Ledger(ctx)
}

// InTx implements seed.Store with DB.InTx, so fn may run more than once.
func (s *SeedStore) InTx(ctx context.Context, fn func(ctx context.Context, tx seed.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// The seeding steps of seed.Tx.

func (q Tx) CatalogHash(ctx context.Context) (int, string, error) {
	var version int
	var hash string
	err := q.idb.NewRaw("SELECT version, content_hash FROM content_catalogs ORDER BY version DESC LIMIT 1").Scan(ctx, &version, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return version, hash, mapError(err)
}

func (q Tx) CardRegistry(ctx context.Context) (map[uint32]string, error) {
	var rows []struct {
		NumID  uint32 `bun:"num_id"`
		CardID string `bun:"card_id"`
	}
	err := q.idb.NewRaw("SELECT num_id, card_id FROM content_card_ids").Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	out := make(map[uint32]string, len(rows))
	for _, r := range rows {
		out[r.NumID] = r.CardID
	}
	return out, nil
}

func (q Tx) PublishCatalog(ctx context.Context, p seed.Published, cards []player.Card) error {
	_, err := q.idb.NewRaw("INSERT INTO content_catalogs (version, etag, content_hash, body, published_at) VALUES (?, ?, ?, ?, ?)",
		p.Version, p.ETag, p.Hash, string(p.Body), p.PublishedAt).Exec(ctx)
	if err != nil {
		return mapError(err)
	}
	for _, c := range cards {
		_, err := q.idb.NewRaw("INSERT INTO content_card_ids (num_id, card_id, first_version) VALUES (?, ?, ?) ON CONFLICT (num_id) DO NOTHING",
			c.NumID, c.ID, p.Version).Exec(ctx)
		if err != nil {
			return mapError(err)
		}
	}
	return nil
}

func (q Tx) LiveOpsHead(ctx context.Context) (*liveops.Head, error) {
	return liveOpsHead(ctx, q.idb)
}

func (q Tx) PublishLiveOps(ctx context.Context, p seed.Published) error {
	_, err := q.idb.NewRaw("INSERT INTO liveops_configs (version, etag, content_hash, body, source, published_at, published_by, description) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		p.Version, p.ETag, p.Hash, string(p.Body), p.Source, p.PublishedAt, liveops.ActorFixtures, "defaults from the fixtures").Exec(ctx)
	return mapError(err)
}

func (q Tx) Ledger(ctx context.Context) (map[string]string, error) {
	var rows []struct {
		Item string `bun:"item"`
		Ref  string `bun:"ref"`
	}
	err := q.idb.NewRaw("SELECT item, ref FROM fixture_ledger").Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Item] = r.Ref
	}
	return out, nil
}

func (q Tx) RecordLedger(ctx context.Context, item, ref string, at time.Time) error {
	_, err := q.idb.NewRaw("INSERT INTO fixture_ledger (item, ref, applied_at) VALUES (?, ?, ?)", item, ref, at).Exec(ctx)
	return mapError(err)
}

func (q Tx) PlayerIDByEmail(ctx context.Context, email string) (uuid.UUID, error) {
	var id uuid.UUID
	err := q.idb.NewRaw("SELECT id FROM users WHERE realm = 'player' AND email = ?", email).Scan(ctx, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return uuid.Nil, nil
	}
	return id, mapError(err)
}

// LiveOpsStore implements liveops.Store (see also liveops.go).
type LiveOpsStore struct{ db *DB }

// LiveOps returns the live-ops configuration store.
func (db *DB) LiveOps() *LiveOpsStore { return &LiveOpsStore{db: db} }

// LiveOpsHead implements liveops.Store.
func (s *LiveOpsStore) LiveOpsHead(ctx context.Context) (*liveops.Head, error) {
	return liveOpsHead(ctx, s.db.bun)
}

func liveOpsHead(ctx context.Context, idb bun.IDB) (*liveops.Head, error) {
	var h liveops.Head
	err := idb.NewRaw("SELECT version, etag, content_hash, source, published_at, published_by, description FROM liveops_configs ORDER BY version DESC LIMIT 1").
		Scan(ctx, &h.Version, &h.ETag, &h.Hash, &h.Source, &h.PublishedAt, &h.PublishedBy, &h.Description)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapError(err)
	}
	h.PublishedAt = h.PublishedAt.UTC()
	return &h, nil
}

// LiveOpsConfig implements liveops.Store.
func (s *LiveOpsStore) LiveOpsConfig(ctx context.Context, version int) (*liveops.Config, error) {
	var body string
	if err := s.db.bun.NewRaw("SELECT body FROM liveops_configs WHERE version = ?", version).Scan(ctx, &body); err != nil {
		return nil, mapError(err)
	}
	var c liveops.Config
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		return nil, err
	}
	return &c, nil
}
