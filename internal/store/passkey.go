package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/auth"
)

type passkeyRow struct {
	bun.BaseModel `bun:"table:passkeys"`

	ID           uuid.UUID `bun:"id,pk"`
	UserID       uuid.UUID `bun:"user_id"`
	Name         string    `bun:"name"`
	CredentialID []byte    `bun:"credential_id"`
	Counter      int64     `bun:"counter"`
	DeviceType   string    `bun:"device_type"`
	BackedUp     bool      `bun:"backed_up"`
	Transports   string    `bun:"transports"`
	AAGUID       string    `bun:"aaguid"`
	Record       string    `bun:"record"`
	CreatedAt    time.Time `bun:"created_at"`
}

type ceremonyRow struct {
	bun.BaseModel `bun:"table:passkey_ceremonies"`

	TokenHash []byte     `bun:"token_hash,pk"`
	Kind      string     `bun:"kind"`
	UserID    *uuid.UUID `bun:"user_id"`
	Session   string     `bun:"session"`
	ExpiresAt time.Time  `bun:"expires_at"`
}

var _ auth.PasskeyStore = (*FactorStore)(nil)

func (r *passkeyRow) passkey() auth.Passkey {
	return auth.Passkey{ID: r.ID, Name: r.Name, UserID: r.UserID, CredentialID: base64.RawURLEncoding.EncodeToString(r.CredentialID),
		PublicKey: publicKeyOf(r.Record), Counter: uint32(r.Counter), DeviceType: r.DeviceType, BackedUp: r.BackedUp,
		Transports: r.Transports, AAGUID: r.AAGUID, CreatedAt: r.CreatedAt.UTC(), Record: []byte(r.Record)}
}

// publicKeyOf reads the COSE public key out of a stored record, for lists.
func publicKeyOf(record string) string {
	var rec struct {
		PublicKey []byte `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(record), &rec); err != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(rec.PublicKey)
}

// InsertPasskey implements auth.PasskeyStore.
func (s *FactorStore) InsertPasskey(ctx context.Context, pk *auth.Passkey) error {
	id, err := base64.RawURLEncoding.DecodeString(pk.CredentialID)
	if err != nil {
		return err
	}
	_, err = s.db.bun.NewInsert().Model(&passkeyRow{ID: pk.ID, UserID: pk.UserID, Name: pk.Name, CredentialID: id,
		Counter: int64(pk.Counter), DeviceType: pk.DeviceType, BackedUp: pk.BackedUp, Transports: pk.Transports,
		AAGUID: pk.AAGUID, Record: string(pk.Record), CreatedAt: pk.CreatedAt.UTC()}).Exec(ctx)
	return mapError(err)
}

// Passkeys implements auth.PasskeyStore.
func (s *FactorStore) Passkeys(ctx context.Context, userID uuid.UUID, limit int) ([]auth.Passkey, error) {
	var rows []passkeyRow
	err := s.db.bun.NewSelect().Model(&rows).Where("user_id = ?", userID).OrderExpr("created_at, id").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]auth.Passkey, len(rows))
	for i := range rows {
		out[i] = rows[i].passkey()
	}
	return out, nil
}

// PasskeyByCredentialID implements auth.PasskeyStore.
func (s *FactorStore) PasskeyByCredentialID(ctx context.Context, credentialID []byte) (*auth.Passkey, error) {
	var r passkeyRow
	err := s.db.bun.NewSelect().Model(&r).Where("credential_id = ?", credentialID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrPasskeyNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	pk := r.passkey()
	return &pk, nil
}

// UsePasskey implements auth.PasskeyStore as a compare-and-set on the counter.
func (s *FactorStore) UsePasskey(ctx context.Context, id uuid.UUID, old, counter uint32, record []byte) (bool, error) {
	res, err := s.db.bun.NewUpdate().Model((*passkeyRow)(nil)).
		Set("counter = ?", int64(counter)).Set("record = ?", string(record)).
		Where("id = ? AND counter = ?", id, int64(old)).Exec(ctx)
	return changedRow(res, err)
}

// RenamePasskey implements auth.PasskeyStore.
func (s *FactorStore) RenamePasskey(ctx context.Context, userID, id uuid.UUID, name string) (*auth.Passkey, error) {
	var rows []passkeyRow
	err := s.db.bun.NewUpdate().Model(&rows).Set("name = ?", name).
		Where("id = ? AND user_id = ?", id, userID).Returning("*").Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	if len(rows) == 0 {
		return nil, auth.ErrPasskeyNotFound
	}
	pk := rows[0].passkey()
	return &pk, nil
}

// DeletePasskey implements auth.PasskeyStore.
func (s *FactorStore) DeletePasskey(ctx context.Context, userID, id uuid.UUID) (bool, error) {
	res, err := s.db.bun.NewDelete().Model((*passkeyRow)(nil)).Where("id = ? AND user_id = ?", id, userID).Exec(ctx)
	return changedRow(res, err)
}

// DeletePasskeys implements auth.PasskeyStore.
func (s *FactorStore) DeletePasskeys(ctx context.Context, userID uuid.UUID) (int, error) {
	res, err := s.db.bun.NewDelete().Model((*passkeyRow)(nil)).Where("user_id = ?", userID).Exec(ctx)
	if err != nil {
		return 0, mapError(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// InsertCeremony implements auth.PasskeyStore.
func (s *FactorStore) InsertCeremony(ctx context.Context, c *auth.Ceremony) error {
	r := &ceremonyRow{TokenHash: c.TokenHash[:], Kind: c.Kind, Session: string(c.Session), ExpiresAt: c.ExpiresAt.UTC()}
	if c.UserID != uuid.Nil {
		r.UserID = &c.UserID
	}
	_, err := s.db.bun.NewInsert().Model(r).Exec(ctx)
	return mapError(err)
}

// TakeCeremony implements auth.PasskeyStore with one DELETE … RETURNING.
func (s *FactorStore) TakeCeremony(ctx context.Context, tokenHash auth.TokenHash) (*auth.Ceremony, error) {
	var rows []ceremonyRow
	err := s.db.bun.NewDelete().Model(&rows).Where("token_hash = ?", tokenHash[:]).Returning("*").Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	if len(rows) == 0 {
		return nil, auth.ErrCeremonyNotFound
	}
	c := &auth.Ceremony{TokenHash: tokenHash, Kind: rows[0].Kind, Session: []byte(rows[0].Session), ExpiresAt: rows[0].ExpiresAt.UTC()}
	if rows[0].UserID != nil {
		c.UserID = *rows[0].UserID
	}
	return c, nil
}
