package player

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/platform"
)

// MaxDeckNameLen bounds deck names, in characters.
const MaxDeckNameLen = 40

// Deck is a player's deck as clients see it. Validity is computed against
// the current catalog on every read, so a deck a balance patch broke is
// kept and shows why it broke.
type Deck struct {
	ID        uuid.UUID     `json:"id"`
	Name      string        `json:"name"`
	Code      string        `json:"code"`
	Source    string        `json:"source"`
	Cards     []DeckCard    `json:"cards"`
	Size      int           `json:"size"`
	IsDefault bool          `json:"isDefault"`
	Valid     bool          `json:"valid"`
	Problems  []DeckProblem `json:"problems"`
	CreatedAt time.Time     `json:"createdAt"`
	UpdatedAt time.Time     `json:"updatedAt"`
}

// DeckList is every deck of a player.
type DeckList struct {
	Decks         []Deck     `json:"decks"`
	DefaultDeckID *uuid.UUID `json:"defaultDeckId"`
	// DefaultValid is false when there is no default or it broke.
	DefaultValid   bool       `json:"defaultValid"`
	CatalogVersion int        `json:"catalogVersion"`
	Limits         DeckLimits `json:"limits"`
}

// DeckLimits tells clients the deck rules that matter when building one.
type DeckLimits struct {
	MaxDecks int `json:"maxDecks"`
	MinCards int `json:"minCards"`
	MaxCards int `json:"maxCards"`
}

// ImportDeckInput is a deck import request.
type ImportDeckInput struct {
	Code       string `json:"code"`
	Name       string `json:"name"`
	SetDefault bool   `json:"setDefault"`
}

// ImportDeckResult is the deck after an import. Duplicate means the player
// already had this deck and nothing new was stored.
type ImportDeckResult struct {
	Deck          Deck       `json:"deck"`
	Duplicate     bool       `json:"duplicate"`
	DefaultDeckID *uuid.UUID `json:"defaultDeckId"`
}

// DefaultDeckResult is the answer to choosing a default deck.
type DefaultDeckResult struct {
	DefaultDeckID uuid.UUID `json:"defaultDeckId"`
	Deck          Deck      `json:"deck"`
}

// deckView renders a stored deck against the catalog.
func (c *Catalog) deckView(row DeckRow, defaultID *uuid.UUID) Deck {
	d := Deck{ID: row.ID, Name: row.Name, Code: row.Code, Source: row.Source,
		IsDefault: defaultID != nil && *defaultID == row.ID,
		CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC()}
	cards, err := DecodeDeck(row.Code)
	if err != nil {
		// Stored codes were canonical when written; a code this server can
		// no longer read is flagged rather than hidden.
		d.Cards = []DeckCard{}
		d.Problems = []DeckProblem{{Code: ProblemUnknownCard, Message: "the deck code can no longer be read: " + err.Error()}}
		return d
	}
	d.Cards = c.deckCards(cards)
	for _, cc := range cards {
		d.Size += cc.Count
	}
	d.Problems = c.CheckDeck(cards)
	d.Valid = len(d.Problems) == 0
	if d.Problems == nil {
		d.Problems = []DeckProblem{}
	}
	return d
}

// Decks lists the player's decks, giving a new player the starter decks
// first.
func (s *Service) Decks(ctx context.Context, playerID uuid.UUID) (*DeckList, error) {
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	return s.deckList(ctx, cat, playerID)
}

func (s *Service) deckList(ctx context.Context, cat *Catalog, playerID uuid.UUID) (*DeckList, error) {
	prof, err := s.ensureStarted(ctx, cat, playerID)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.Decks(ctx, playerID)
	if err != nil {
		return nil, fmt.Errorf("list decks: %w", err)
	}
	return s.deckListFrom(cat, prof, rows), nil
}

// deckListFrom renders stored decks against the catalog.
func (s *Service) deckListFrom(cat *Catalog, prof *Profile, rows []DeckRow) *DeckList {
	list := &DeckList{Decks: make([]Deck, 0, len(rows)), DefaultDeckID: prof.DefaultDeckID, CatalogVersion: cat.Version,
		Limits: DeckLimits{MaxDecks: s.limits.MaxDecks, MinCards: cat.Rules.Deck.MinCards, MaxCards: cat.Rules.Deck.MaxCards}}
	for _, r := range rows {
		d := cat.deckView(r, prof.DefaultDeckID)
		if d.IsDefault {
			list.DefaultValid = d.Valid
		}
		list.Decks = append(list.Decks, d)
	}
	return list
}

// ensureStarted returns the player's profile, first giving a player who
// has none the starter decks and the default one. Doing it lazily on first
// access needs no hook in sign-up and also covers accounts created before
// the player service existed.
func (s *Service) ensureStarted(ctx context.Context, cat *Catalog, playerID uuid.UUID) (*Profile, error) {
	prof, err := s.store.Profile(ctx, playerID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	if prof != nil && prof.StarterGranted {
		return prof, nil
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.grantStarterTx(ctx, tx, cat, playerID); err != nil {
			return err
		}
		prof, err = tx.Profile(ctx, playerID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start player: %w", err)
	}
	return prof, nil
}

// grantStarterTx gives the starter decks once per player; concurrent first
// requests agree on one winner through GrantStarter.
func (s *Service) grantStarterTx(ctx context.Context, tx Tx, cat *Catalog, playerID uuid.UUID) error {
	now := s.clock()
	if err := tx.EnsureProfiles(ctx, now, playerID); err != nil {
		return err
	}
	if err := tx.LockProfiles(ctx, playerID); err != nil {
		return err
	}
	granted, err := tx.GrantStarter(ctx, playerID, now)
	if err != nil || !granted {
		return err
	}
	var defaultID *uuid.UUID
	for _, sd := range cat.StarterDecks {
		row := &DeckRow{ID: uuid.New(), UserID: playerID, Name: sd.Name, Code: sd.Code, Source: SourceStarter, CreatedAt: now, UpdatedAt: now}
		switch err := tx.InsertDeck(ctx, row); {
		case errors.Is(err, ErrDuplicate):
			continue
		case err != nil:
			return err
		}
		if sd.Default {
			defaultID = &row.ID
		}
		now = now.Add(time.Microsecond) // keeps the fixture order when listing
	}
	prof, err := tx.Profile(ctx, playerID)
	if err != nil {
		return err
	}
	if defaultID != nil && prof.DefaultDeckID == nil {
		return tx.SetDefaultDeck(ctx, playerID, defaultID, now)
	}
	return nil
}

// CheckDeckCode decodes a code and checks it against the catalog. It
// returns the canonical cards, or DECK_CODE_INVALID (the code cannot be
// read) or DECK_INVALID (the deck breaks a rule) with every reason.
func (c *Catalog) CheckDeckCode(code string) ([]CardCount, error) {
	cards, err := DecodeDeck(strings.TrimSpace(code))
	if err != nil {
		var de *DeckCodeError
		if errors.As(err, &de) {
			return nil, (&platform.Error{Kind: platform.KindInvalid, Code: CodeDeckCodeInvalid,
				Message: "The deck code " + de.Message, Details: map[string]any{"reason": de.Reason}})
		}
		return nil, err
	}
	if problems := c.CheckDeck(cards); len(problems) > 0 {
		return nil, deckInvalid(problems)
	}
	return cards, nil
}

func deckInvalid(problems []DeckProblem) error {
	msg := problems[0].Message
	if len(problems) > 1 {
		msg = fmt.Sprintf("%s (and %d more problems)", msg, len(problems)-1)
	}
	return &platform.Error{Kind: platform.KindUnprocessable, Code: CodeDeckInvalid,
		Message: "The deck breaks the rules: " + msg, Details: map[string]any{"problems": problems}}
}

// CleanDeckName trims a deck name and rejects control characters and
// overlong names.
func CleanDeckName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return "", platform.Invalid("name", "must be printable text")
	}
	if utf8.RuneCountInString(name) > MaxDeckNameLen {
		return "", platform.Invalid("name", fmt.Sprintf("must be at most %d characters", MaxDeckNameLen))
	}
	return name, nil
}

// ImportDeck stores a deck from its code. Importing a deck the player
// already has returns it with Duplicate set (and still honours
// SetDefault); only a valid deck is stored.
func (s *Service) ImportDeck(ctx context.Context, playerID uuid.UUID, in ImportDeckInput) (*ImportDeckResult, error) {
	if strings.TrimSpace(in.Code) == "" {
		return nil, platform.Invalid("code", "is required")
	}
	name, err := CleanDeckName(in.Name)
	if err != nil {
		return nil, err
	}
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	cards, err := cat.CheckDeckCode(in.Code)
	if err != nil {
		return nil, err
	}
	code, err := EncodeDeck(cards)
	if err != nil {
		return nil, fmt.Errorf("re-encode deck: %w", err)
	}
	var res *ImportDeckResult
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.grantStarterTx(ctx, tx, cat, playerID); err != nil {
			return err
		}
		rows, err := tx.Decks(ctx, playerID)
		if err != nil {
			return err
		}
		prof, err := tx.Profile(ctx, playerID)
		if err != nil {
			return err
		}
		now := s.clock()
		row := findDeck(rows, func(r DeckRow) bool { return r.Code == code })
		duplicate := row != nil
		if !duplicate {
			if len(rows) >= s.limits.MaxDecks {
				return platform.Errorf(platform.KindConflict, CodeDeckLimitReached,
					"You already have %d decks, the most allowed", s.limits.MaxDecks).WithDetails("limit", s.limits.MaxDecks)
			}
			if name == "" {
				name = fmt.Sprintf("Deck %d", len(rows)+1)
			}
			row = &DeckRow{ID: uuid.New(), UserID: playerID, Name: name, Code: code, Source: SourceImport, CreatedAt: now, UpdatedAt: now}
			if err := tx.InsertDeck(ctx, row); err != nil {
				return err
			}
		}
		defaultID := prof.DefaultDeckID
		if in.SetDefault || defaultID == nil {
			defaultID = &row.ID
			if err := tx.SetDefaultDeck(ctx, playerID, defaultID, now); err != nil {
				return err
			}
		}
		res = &ImportDeckResult{Deck: cat.deckView(*row, defaultID), Duplicate: duplicate, DefaultDeckID: defaultID}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import deck: %w", err)
	}
	return res, nil
}

func findDeck(rows []DeckRow, match func(DeckRow) bool) *DeckRow {
	for i := range rows {
		if match(rows[i]) {
			return &rows[i]
		}
	}
	return nil
}

// SetDefaultDeck makes one of the player's decks the default. Only a deck
// that is valid against the current catalog qualifies.
func (s *Service) SetDefaultDeck(ctx context.Context, playerID, deckID uuid.UUID) (*DefaultDeckResult, error) {
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	var res *DefaultDeckResult
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.grantStarterTx(ctx, tx, cat, playerID); err != nil {
			return err
		}
		rows, err := tx.Decks(ctx, playerID)
		if err != nil {
			return err
		}
		row := findDeck(rows, func(r DeckRow) bool { return r.ID == deckID })
		if row == nil {
			return platform.Errorf(platform.KindNotFound, CodeDeckNotFound, "You have no deck %s", deckID)
		}
		view := cat.deckView(*row, &deckID)
		if !view.Valid {
			return deckInvalid(view.Problems)
		}
		if err := tx.SetDefaultDeck(ctx, playerID, &deckID, s.clock()); err != nil {
			return err
		}
		res = &DefaultDeckResult{DefaultDeckID: deckID, Deck: view}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("set default deck: %w", err)
	}
	return res, nil
}

// defaultDeckValid reports whether the player has a default deck that the
// catalog accepts; lobbies for ranked queues require one.
func (s *Service) defaultDeckValid(ctx context.Context, r Reader, cat *Catalog, playerID uuid.UUID) (bool, error) {
	prof, err := r.Profile(ctx, playerID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if prof.DefaultDeckID == nil {
		return false, nil
	}
	rows, err := r.Decks(ctx, playerID)
	if err != nil {
		return false, err
	}
	row := findDeck(rows, func(d DeckRow) bool { return d.ID == *prof.DefaultDeckID })
	return row != nil && cat.deckView(*row, nil).Valid, nil
}
