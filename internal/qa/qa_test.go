package qa_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/qa"
	"github.com/towerdefence/platformctl/internal/seed"
)

// noAccounts is a database without the development world.
type noAccounts struct{}

func (noAccounts) ByEmail(context.Context, account.Realm, string) (*account.User, error) {
	return nil, account.ErrNotFound
}

func TestVectorsFromTheFixtures(t *testing.T) {
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	f, err := qa.NewFixtures(set, noAccounts{})
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := f.DeckCodeVectors(t.Context())
	want := len(set.Content.StarterDecks)
	for _, p := range set.World.Players {
		want += len(p.Decks)
	}
	valid := 0
	reasons := map[string]string{}
	for _, v := range vs {
		if v.Expect != "valid" {
			reasons[v.Name] = v.Expect
			if len(v.Cards) != 0 {
				t.Errorf("%s: refused vector lists cards", v.Name)
			}
			continue
		}
		valid++
		// A valid vector is canonical (or, the loose one, decodes to the
		// canonical code's cards): re-encoding its cards gives a code that
		// decodes to the same cards.
		cards := make([]player.CardCount, len(v.Cards))
		for i, c := range v.Cards {
			cards[i] = player.CardCount{NumID: uint32(c.NumID), Count: c.Count}
		}
		code, err := player.EncodeDeck(cards)
		if err != nil || (code != v.Code && !strings.Contains(v.Name, "loosely")) {
			t.Errorf("%s: %s re-encodes to %s (%v)", v.Name, v.Code, code, err)
		}
	}
	if valid != want+1 {
		t.Errorf("%d valid vectors, want %d fixture decks and the loosely written one", valid, want)
	}
	for name, reason := range map[string]string{
		"corrupted: last character changed": player.DeckCodeBadChecksum,
		"future version":                    player.DeckCodeUnsupportedVersion,
		"foreign characters":                player.DeckCodeMalformed,
		"not a deck code":                   player.DeckCodeMalformed,
	} {
		if reasons[name] != reason {
			t.Errorf("vector %q expects %q, want %q", name, reasons[name], reason)
		}
	}

	players, err := f.FixturePlayers(t.Context())
	if err != nil || len(players) != len(set.World.Players) {
		t.Fatalf("fixture players %+v %v", players, err)
	}
	for _, p := range players {
		if p.ID != "" || !strings.Contains(p.Notes, "not seeded") || p.Password == "" {
			t.Errorf("unseeded fixture player %+v", p)
		}
	}
}

func TestLazyLoadsOnFirstUseOnce(t *testing.T) {
	ctx := t.Context()
	loads := 0
	lazy := qa.NewLazy(func() (*seed.Set, error) {
		loads++
		set, ps := seed.Load(fixtures.FS())
		if len(ps) > 0 {
			return nil, fmt.Errorf("embedded fixtures: %v", ps)
		}
		return set, nil
	}, noAccounts{})
	if loads != 0 {
		t.Fatal("NewLazy loaded the fixtures before they were asked for")
	}
	players, err := lazy.FixturePlayers(ctx)
	if err != nil || len(players) == 0 {
		t.Fatalf("fixture players %v, %v", players, err)
	}
	vectors, err := lazy.DeckCodeVectors(ctx)
	if err != nil || len(vectors) == 0 {
		t.Fatalf("vectors %v, %v", vectors, err)
	}
	if loads != 1 {
		t.Errorf("loaded %d times, want once", loads)
	}

	broken := qa.NewLazy(func() (*seed.Set, error) { return nil, errors.New("no fixtures") }, noAccounts{})
	if _, err := broken.FixturePlayers(ctx); err == nil || err.Error() != "no fixtures" {
		t.Errorf("FixturePlayers over a failing load: %v", err)
	}
	if _, err := broken.DeckCodeVectors(ctx); err == nil || err.Error() != "no fixtures" {
		t.Errorf("DeckCodeVectors over a failing load: %v", err)
	}
}
