package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// ExportFormat is the version of the export document; it grows when a
// section is added, so readers can tell an empty section from a missing
// one.
const ExportFormat = 1

// Export is everything held about a player, as one JSON document
// (schema PlayerExport in the OpenAPI document). Each section is a list,
// empty rather than absent; secrets (password hash, token hashes) are
// never part of it.
type Export struct {
	Format     int              `json:"format"`
	ExportedAt time.Time        `json:"exportedAt"`
	Profile    ExportProfile    `json:"profile"`
	Sessions   []ExportSession  `json:"sessions"`
	Decks      []ExportDeck     `json:"decks"`
	Social     []ExportEdge     `json:"social"`
	Lobbies    []ExportLobby    `json:"lobbies"`
	Pending    []ExportChange   `json:"pendingChanges"`
	Suspension *auth.Suspension `json:"suspension"`
	Audit      []ExportAudit    `json:"audit"`
	// LinkedAccounts and SecondFactors list sign-in providers and second
	// factors by name and date only, never tokens or secrets.
	LinkedAccounts []ExportLinked `json:"linkedAccounts"`
	SecondFactors  []ExportFactor `json:"secondFactors"`
}

// ExportProfile is the account itself.
type ExportProfile struct {
	ID            uuid.UUID     `json:"id"`
	Realm         account.Realm `json:"realm"`
	Email         string        `json:"email"`
	EmailVerified bool          `json:"emailVerified"`
	Name          string        `json:"name"`
	Nickname      string        `json:"nickname"`
	Image         *string       `json:"image"`
	CreatedAt     time.Time     `json:"createdAt"`
	UpdatedAt     time.Time     `json:"updatedAt"`
}

// ExportSession is a signed-in device with where it signed in from.
type ExportSession struct {
	ID        uuid.UUID `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	IPAddress string    `json:"ipAddress"`
	UserAgent string    `json:"userAgent"`
}

// ExportDeck is a saved deck.
type ExportDeck struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Code      string    `json:"code"`
	Source    string    `json:"source"`
	Default   bool      `json:"default"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ExportEdge is the player's side of a relationship. Another player's
// side is theirs: a block by someone else is not shown.
type ExportEdge struct {
	OtherID uuid.UUID `json:"otherId"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`
}

// ExportLobby is a lobby the player hosts or hosted, or is in.
type ExportLobby struct {
	ID        uuid.UUID  `json:"id"`
	QueueID   string     `json:"queueId"`
	Status    string     `json:"status"`
	Host      bool       `json:"host"`
	Member    bool       `json:"member"`
	CreatedAt time.Time  `json:"createdAt"`
	ClosedAt  *time.Time `json:"closedAt"`
}

// ExportChange is a profile change, pending or done, without the new
// password's hash.
type ExportChange struct {
	ID          uuid.UUID `json:"id"`
	Type        string    `json:"type"`
	Status      string    `json:"status"`
	NewName     *string   `json:"newName"`
	NewNickname *string   `json:"newNickname"`
	NewEmail    *string   `json:"newEmail"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// ExportAudit is an audit entry by or about the player.
type ExportAudit struct {
	At      time.Time         `json:"at"`
	Actor   string            `json:"actor"`
	Action  string            `json:"action"`
	Reason  string            `json:"reason"`
	Details map[string]string `json:"details"`
}

// ExportLinked is a linked sign-in provider.
type ExportLinked struct {
	ProviderID string    `json:"providerId"`
	CreatedAt  time.Time `json:"createdAt"`
}

// ExportFactor is a second factor or passkey, by kind and name.
type ExportFactor struct {
	Kind      string    `json:"kind"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// ExportOf returns everything held about the principal; it needs a
// session opened within FreshAge.
func (s *Service) ExportOf(ctx context.Context, p *auth.Principal) (*Export, error) {
	if err := s.auth.RequireFresh(p); err != nil {
		return nil, err
	}
	return s.export(ctx, p.User)
}

// ExportBySupport returns everything held about an account, for support.
// The export is personal data leaving the platform, so it is handed out
// only once the audit trail records actor taking it.
func (s *Service) ExportBySupport(ctx context.Context, actor string, realm account.Realm, userRef string) (*Export, error) {
	if strings.TrimSpace(actor) == "" {
		return nil, platform.Invalid("actor", "is required")
	}
	u, err := s.auth.Accounts().Find(ctx, realm, userRef)
	if err != nil {
		return nil, err
	}
	e, err := s.export(ctx, u)
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		return tx.InsertAudit(ctx, &audit.Entry{At: e.ExportedAt, Actor: actor, Action: ActionExport, Target: u.ID.String(),
			Details: map[string]string{"realm": string(realm)}})
	})
	if err != nil {
		return nil, fmt.Errorf("record the export: %w", err)
	}
	return e, nil
}

func (s *Service) export(ctx context.Context, u *account.User) (*Export, error) {
	e, err := s.store.Export(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("export account: %w", err)
	}
	e.Format, e.ExportedAt = ExportFormat, s.clock()
	e.Profile = ExportProfile{ID: u.ID, Realm: u.Realm, Email: u.Email, EmailVerified: u.EmailVerified, Name: u.Name,
		Nickname: u.Nickname, Image: u.Image, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
	return e, nil
}
