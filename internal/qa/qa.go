// Package qa is the testing metadata QA reads (GET /api/testing/legacy-tools
// when PLATFORM_TESTING_TOOLS is on): the testing tools of this build, map
// seeds with known properties, and, derived from the fixtures, the
// development players and golden deck-code vectors. Every vector is
// computed with the server's own deck-code encoder and decoder, so the
// vectors are what a client's implementation must agree with.
package qa

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/seed"
)

// Accounts finds seeded players by email.
type Accounts interface {
	ByEmail(ctx context.Context, realm account.Realm, email string) (*account.User, error)
}

// Fixtures implements FixtureSource over a loaded fixture set.
type Fixtures struct {
	set      *seed.Set
	accounts Accounts
	vectors  []DeckCodeVector
}

// NewFixtures computes the deck-code vectors of set; accounts tells which
// fixture players exist in this database.
func NewFixtures(set *seed.Set, accounts Accounts) (*Fixtures, error) {
	v, err := vectors(set)
	if err != nil {
		return nil, err
	}
	return &Fixtures{set: set, accounts: accounts, vectors: v}, nil
}

// Lazy is a FixtureSource that loads its fixtures on first use.
// The testing metadata is asked for now and then by QA, while loading the
// fixtures parses every file and encodes every deck, so a starting server
// need not pay for it, nor a server nobody asks hold it.
type Lazy struct {
	fixtures func() (*Fixtures, error)
}

// NewLazy returns a source over the set load returns, calling load once, on
// first use; its error, if any, is every call's answer.
func NewLazy(load func() (*seed.Set, error), accounts Accounts) *Lazy {
	return &Lazy{fixtures: sync.OnceValues(func() (*Fixtures, error) {
		set, err := load()
		if err != nil {
			return nil, err
		}
		return NewFixtures(set, accounts)
	})}
}

// FixturePlayers implements FixtureSource.
func (l *Lazy) FixturePlayers(ctx context.Context) ([]FixturePlayer, error) {
	f, err := l.fixtures()
	if err != nil {
		return nil, err
	}
	return f.FixturePlayers(ctx)
}

// DeckCodeVectors implements FixtureSource.
func (l *Lazy) DeckCodeVectors(ctx context.Context) ([]DeckCodeVector, error) {
	f, err := l.fixtures()
	if err != nil {
		return nil, err
	}
	return f.DeckCodeVectors(ctx)
}

// FixturePlayers implements FixtureSource: the development world's
// players, with their id where this database has them (the world is only
// seeded outside production).
func (f *Fixtures) FixturePlayers(ctx context.Context) ([]FixturePlayer, error) {
	out := []FixturePlayer{}
	if f.set.World == nil {
		return out, nil
	}
	for _, p := range f.set.World.Players {
		fp := FixturePlayer{Email: p.Email, Nickname: p.Nickname, Name: p.Name, Password: p.Password,
			Notes: fmt.Sprintf("%d deck(s) in the fixtures", len(p.Decks))}
		u, err := f.accounts.ByEmail(ctx, account.RealmPlayer, p.Email)
		switch {
		case err == nil:
			fp.ID = u.ID.String()
		case platform.IsKind(err, platform.KindNotFound):
			fp.Notes += "; not seeded in this database"
		default:
			return nil, err
		}
		out = append(out, fp)
	}
	return out, nil
}

// DeckCodeVectors implements FixtureSource.
func (f *Fixtures) DeckCodeVectors(context.Context) ([]DeckCodeVector, error) {
	return f.vectors, nil
}

// expectValid is the Expect of a code that decodes.
const expectValid = "valid"

// vectors encodes every starter and world deck canonically, then derives
// codes that must be refused (a corrupted checksum, a future version,
// foreign characters) and one written loosely (lower case, dashes) that
// must still decode. Each expectation is what the decoder answers.
func vectors(set *seed.Set) ([]DeckCodeVector, error) {
	numIDs := map[string]uint32{}
	for _, c := range set.Content.Cards {
		numIDs[c.ID] = c.NumID
	}
	var out []DeckCodeVector
	add := func(name string, spec player.DeckSpec) error {
		var cards []player.CardCount
		if spec.Code != "" {
			var err error
			if cards, err = player.DecodeDeck(spec.Code); err != nil {
				return fmt.Errorf("fixture deck %s: %w", name, err)
			}
		}
		for id, n := range spec.Cards {
			cards = append(cards, player.CardCount{NumID: numIDs[id], Count: n})
		}
		code, err := player.EncodeDeck(cards)
		if err != nil {
			return fmt.Errorf("fixture deck %s: %w", name, err)
		}
		out = append(out, vector(name, code))
		return nil
	}
	for _, d := range set.Content.StarterDecks {
		if err := add("starter/"+d.ID, d.DeckSpec); err != nil {
			return nil, err
		}
	}
	if set.World != nil {
		for _, p := range set.World.Players {
			for _, d := range p.Decks {
				if err := add("world/"+p.Nickname+"/"+d.Name, d.DeckSpec); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(out) == 0 {
		return []DeckCodeVector{}, nil
	}
	base := out[0].Code
	out = append(out,
		vector("loosely written: lower case with dashes", strings.ToLower(base[:6])+"-"+strings.ToLower(base[6:])),
		vector("corrupted: last character changed", base[:len(base)-1]+flip(base[len(base)-1])),
		vector("future version", base[:2]+"Z"+base[3:]),
		vector("foreign characters", base[:4]+"!"+base[5:]),
		vector("not a deck code", "hello"),
	)
	return out, nil
}

// vector decodes code and records the answer.
func vector(name, code string) DeckCodeVector {
	v := DeckCodeVector{Name: name, Code: code, Expect: expectValid, Cards: []DeckCodeCards{}}
	cards, err := player.DecodeDeck(code)
	var de *player.DeckCodeError
	switch {
	case errors.As(err, &de):
		v.Expect = de.Reason
	case err != nil:
		v.Expect = err.Error()
	}
	for _, c := range cards {
		v.Cards = append(v.Cards, DeckCodeCards{NumID: int(c.NumID), Count: c.Count})
	}
	return v
}

// flip returns another character of the deck-code alphabet.
func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}
