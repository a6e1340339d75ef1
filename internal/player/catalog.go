package player

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Unit sizes. Small units walk narrow lanes; large units need the wide
// route and are targeted separately.
const (
	SizeSmall = "small"
	SizeLarge = "large"
)

// Card rarities, from most to least common.
const (
	RarityCommon    = "common"
	RarityRare      = "rare"
	RarityEpic      = "epic"
	RarityLegendary = "legendary"
)

// What a card deploys.
const (
	KindTower = "tower"
	KindTrap  = "trap"
	KindUnit  = "unit"
)

// Trap triggers.
const (
	TriggerEnter = "enter" // fires when a unit steps on it
	TriggerTimer = "timer" // fires on a fixed period
)

// Content is the game content designers write: everything in the catalog
// except the version, which the database assigns when the content changes.
type Content struct {
	Rules        Rules         `json:"rules"`
	Towers       []Tower       `json:"towers"`
	Traps        []Trap        `json:"traps"`
	Units        []Unit        `json:"units"`
	Cards        []Card        `json:"cards"`
	StarterDecks []StarterDeck `json:"starterDecks"`
}

// Rules are the game rules the catalog carries.
type Rules struct {
	Deck DeckRules `json:"deck"`
}

// DeckRules decide which decks are legal.
type DeckRules struct {
	MinCards  int        `json:"minCards"`
	MaxCards  int        `json:"maxCards"`
	MaxCopies CopyLimits `json:"maxCopies"`
}

// CopyLimits is the most copies of one card a deck may hold, by rarity.
type CopyLimits struct {
	Common    int `json:"common"`
	Rare      int `json:"rare"`
	Epic      int `json:"epic"`
	Legendary int `json:"legendary"`
}

func (l CopyLimits) of(rarity string) int {
	switch rarity {
	case RarityCommon:
		return l.Common
	case RarityRare:
		return l.Rare
	case RarityEpic:
		return l.Epic
	case RarityLegendary:
		return l.Legendary
	}
	return 0
}

// Tower is a structure built on a build zone that shoots at passing units.
type Tower struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Footprint is the side of the square of cells the tower occupies.
	Footprint    int      `json:"footprint"`
	Cost         int      `json:"cost"`
	Damage       int      `json:"damage"`
	Range        int      `json:"range"` // in cells
	CooldownMs   int      `json:"cooldownMs"`
	SplashRadius int      `json:"splashRadius"` // in cells; 0 hits one target
	Targets      []string `json:"targets"`      // unit sizes it can hit
}

// Trap is placed on a lane cell and acts on the units that cross it.
type Trap struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Cost        int      `json:"cost"`
	Trigger     string   `json:"trigger"`
	Charges     int      `json:"charges"`
	Damage      int      `json:"damage"`
	SlowPercent int      `json:"slowPercent"`
	StunMs      int      `json:"stunMs"`
	Affects     []string `json:"affects"` // unit sizes it acts on
}

// Unit walks the lanes toward the opponent's base.
type Unit struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Size        string `json:"size"`
	Cost        int    `json:"cost"`
	HP          int    `json:"hp"`
	Armor       int    `json:"armor"`
	Speed       int    `json:"speed"` // cells per ten seconds
	Bounty      int    `json:"bounty"`
}

// Card is the deck-building layer: a card deploys a tower, a trap or a unit.
// NumID is permanent: deck codes carry it, so it is never reused.
type Card struct {
	ID          string `json:"id"`
	NumID       uint32 `json:"numId"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Rarity      string `json:"rarity"`
	Cost        int    `json:"cost"` // energy to play
	Deploys     Ref    `json:"deploys"`
	// MaxCopies overrides the rarity's limit when above zero.
	MaxCopies      int    `json:"maxCopies,omitempty"`
	Disabled       bool   `json:"disabled,omitempty"`
	DisabledReason string `json:"disabledReason,omitempty"`
}

// Ref names an entity of the catalog.
type Ref struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// StarterDeck is given to every new player.
type StarterDeck struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Default bool   `json:"default,omitempty"`
	DeckSpec
}

// DeckSpec writes a deck in fixtures either as a deck code or as a map of
// card ids to counts, whichever is handier; exactly one must be set.
type DeckSpec struct {
	Code  string         `json:"code,omitempty"`
	Cards map[string]int `json:"cards,omitempty"`
}

type problems = platform.Problems

var slug = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

const (
	maxSlugLen        = 40
	maxNameLen        = 40
	maxDescriptionLen = 280
)

func checkSlug(ps *problems, path, id string, seen map[string]bool) {
	switch {
	case id == "":
		ps.Add(path, "is missing")
	case len(id) > maxSlugLen || !slug.MatchString(id):
		ps.Add(path, "%q is not a lower-case slug like arrow-tower (at most %d characters)", id, maxSlugLen)
	case seen[id]:
		ps.Add(path, "duplicate id %q", id)
	}
	seen[id] = true
}

func checkText(ps *problems, path, name, description string) {
	if strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > maxNameLen {
		ps.Add(path+".name", "must be 1-%d characters", maxNameLen)
	}
	if utf8.RuneCountInString(description) > maxDescriptionLen {
		ps.Add(path+".description", "must be at most %d characters", maxDescriptionLen)
	}
}

func checkRange(ps *problems, path string, v, lo, hi int) {
	if v < lo || v > hi {
		ps.Add(path, "%d is outside %d-%d", v, lo, hi)
	}
}

func checkSizes(ps *problems, path string, sizes []string) {
	if len(sizes) == 0 {
		ps.Add(path, "must name at least one unit size (small, large)")
	}
	seen := map[string]bool{}
	for i, s := range sizes {
		if s != SizeSmall && s != SizeLarge {
			ps.Add(fmt.Sprintf("%s[%d]", path, i), "%q is not a unit size (small, large)", s)
		} else if seen[s] {
			ps.Add(fmt.Sprintf("%s[%d]", path, i), "%q is listed twice", s)
		}
		seen[s] = true
	}
}

// Validate returns every problem with the content, or nil. Paths start with
// the section (rules, towers, traps, units, cards, starterDecks).
func (c *Content) Validate() []platform.Problem {
	var ps problems
	c.checkRules(&ps)
	entities := map[string]map[string]bool{KindTower: c.checkTowers(&ps), KindTrap: c.checkTraps(&ps), KindUnit: c.checkUnits(&ps)}
	c.checkCards(&ps, entities)
	c.checkStarterDecks(&ps)
	if len(ps) == 0 {
		return nil
	}
	return ps
}

func (c *Content) checkRules(ps *problems) {
	r := c.Rules.Deck
	checkRange(ps, "rules.deck.minCards", r.MinCards, 1, 60)
	checkRange(ps, "rules.deck.maxCards", r.MaxCards, max(r.MinCards, 1), 60)
	for _, l := range []struct {
		rarity string
		v      int
	}{{RarityCommon, r.MaxCopies.Common}, {RarityRare, r.MaxCopies.Rare}, {RarityEpic, r.MaxCopies.Epic}, {RarityLegendary, r.MaxCopies.Legendary}} {
		checkRange(ps, "rules.deck.maxCopies."+l.rarity, l.v, 1, 9)
	}
}

// checkTowers checks the towers and returns their ids.
func (c *Content) checkTowers(ps *problems) map[string]bool {
	towers := map[string]bool{}
	for i, t := range c.Towers {
		p := fmt.Sprintf("towers[%d]", i)
		checkSlug(ps, p+".id", t.ID, towers)
		checkText(ps, p, t.Name, t.Description)
		checkRange(ps, p+".footprint", t.Footprint, 1, 3)
		checkRange(ps, p+".cost", t.Cost, 0, 10000)
		checkRange(ps, p+".damage", t.Damage, 1, 100000)
		checkRange(ps, p+".range", t.Range, 1, 20)
		checkRange(ps, p+".cooldownMs", t.CooldownMs, 50, 60000)
		checkRange(ps, p+".splashRadius", t.SplashRadius, 0, 5)
		checkSizes(ps, p+".targets", t.Targets)
	}
	return towers
}

// checkTraps checks the traps and returns their ids.
func (c *Content) checkTraps(ps *problems) map[string]bool {
	traps := map[string]bool{}
	for i, t := range c.Traps {
		p := fmt.Sprintf("traps[%d]", i)
		checkSlug(ps, p+".id", t.ID, traps)
		checkText(ps, p, t.Name, t.Description)
		checkRange(ps, p+".cost", t.Cost, 0, 10000)
		if t.Trigger != TriggerEnter && t.Trigger != TriggerTimer {
			ps.Add(p+".trigger", "%q is not a trigger (enter, timer)", t.Trigger)
		}
		checkRange(ps, p+".charges", t.Charges, 1, 100)
		checkRange(ps, p+".damage", t.Damage, 0, 100000)
		checkRange(ps, p+".slowPercent", t.SlowPercent, 0, 90)
		checkRange(ps, p+".stunMs", t.StunMs, 0, 10000)
		if t.Damage == 0 && t.SlowPercent == 0 && t.StunMs == 0 {
			ps.Add(p, "has no effect: set damage, slowPercent or stunMs")
		}
		checkSizes(ps, p+".affects", t.Affects)
	}
	return traps
}

// checkUnits checks the units and returns their ids.
func (c *Content) checkUnits(ps *problems) map[string]bool {
	units := map[string]bool{}
	for i, u := range c.Units {
		p := fmt.Sprintf("units[%d]", i)
		checkSlug(ps, p+".id", u.ID, units)
		checkText(ps, p, u.Name, u.Description)
		if u.Size != SizeSmall && u.Size != SizeLarge {
			ps.Add(p+".size", "%q is not a unit size (small, large)", u.Size)
		}
		checkRange(ps, p+".cost", u.Cost, 0, 10000)
		checkRange(ps, p+".hp", u.HP, 1, 1000000)
		checkRange(ps, p+".armor", u.Armor, 0, 90)
		checkRange(ps, p+".speed", u.Speed, 1, 100)
		checkRange(ps, p+".bounty", u.Bounty, 0, 10000)
	}
	return units
}

// checkCards checks the cards against the ids of what they deploy,
// entities by kind.
func (c *Content) checkCards(ps *problems, entities map[string]map[string]bool) {
	cards, numIDs := map[string]bool{}, map[uint32]string{}
	for i, cd := range c.Cards {
		p := fmt.Sprintf("cards[%d]", i)
		checkSlug(ps, p+".id", cd.ID, cards)
		checkText(ps, p, cd.Name, cd.Description)
		switch other, dup := numIDs[cd.NumID]; {
		case cd.NumID == 0 || cd.NumID > maxNumID:
			ps.Add(p+".numId", "%d is outside 1-%d", cd.NumID, maxNumID)
		case dup:
			ps.Add(p+".numId", "duplicate numId %d (also card %q)", cd.NumID, other)
		default:
			numIDs[cd.NumID] = cd.ID
		}
		if !slices.Contains([]string{RarityCommon, RarityRare, RarityEpic, RarityLegendary}, cd.Rarity) {
			ps.Add(p+".rarity", "%q is not a rarity (common, rare, epic, legendary)", cd.Rarity)
		}
		checkRange(ps, p+".cost", cd.Cost, 0, 20)
		if known, ok := entities[cd.Deploys.Kind]; !ok {
			ps.Add(p+".deploys.kind", "%q is not a kind (tower, trap, unit)", cd.Deploys.Kind)
		} else if !known[cd.Deploys.ID] {
			ps.Add(p+".deploys.id", "unknown %s %q", cd.Deploys.Kind, cd.Deploys.ID)
		}
		checkRange(ps, p+".maxCopies", cd.MaxCopies, 0, 9)
		if cd.DisabledReason != "" && !cd.Disabled {
			ps.Add(p+".disabledReason", "is set but the card is not disabled")
		}
	}
}

// checkStarterDecks checks the starter decks against the catalog: one of
// them, exactly, is the default.
func (c *Content) checkStarterDecks(ps *problems) {
	if len(c.StarterDecks) == 0 {
		ps.Add("starterDecks", "at least one starter deck is needed: new players get them")
	}
	cat := c.index()
	decks, defaults := map[string]bool{}, 0
	for i, d := range c.StarterDecks {
		p := fmt.Sprintf("starterDecks[%d]", i)
		checkSlug(ps, p+".id", d.ID, decks)
		checkText(ps, p, d.Name, "")
		if d.Default {
			defaults++
		}
		cat.checkSpec(ps, p, d.DeckSpec)
	}
	if len(c.StarterDecks) > 0 && defaults != 1 {
		ps.Add("starterDecks", "exactly one starter deck must be the default, found %d", defaults)
	}
}

// checkSpec resolves a fixture deck and adds a problem for a bad code, an
// unknown card or a deck the rules reject.
func (c *Catalog) checkSpec(ps *problems, path string, spec DeckSpec) {
	cards, err := c.ResolveSpec(spec)
	if err != nil {
		ps.Add(path, "%v", err)
		return
	}
	for _, dp := range c.CheckDeck(cards) {
		ps.Add(path, "%s", dp.Message)
	}
}

// ResolveSpec turns a fixture deck into its cards.
func (c *Catalog) ResolveSpec(spec DeckSpec) ([]CardCount, error) {
	switch {
	case spec.Code != "" && spec.Cards != nil:
		return nil, fmt.Errorf("set either code or cards, not both")
	case spec.Code != "":
		cards, err := DecodeDeck(spec.Code)
		if err != nil {
			return nil, fmt.Errorf("bad deck code %q: %w", spec.Code, err)
		}
		return cards, nil
	case len(spec.Cards) > 0:
		ids := make([]string, 0, len(spec.Cards))
		for id := range spec.Cards {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		cards := make([]CardCount, 0, len(ids))
		for _, id := range ids {
			card, ok := c.byID[id]
			if !ok {
				return nil, fmt.Errorf("unknown card %q", id)
			}
			n := spec.Cards[id]
			if n < 1 || n > maxCodeCount {
				return nil, fmt.Errorf("card %q: count %d is outside 1-%d", id, n, maxCodeCount)
			}
			cards = append(cards, CardCount{NumID: card.NumID, Count: n})
		}
		return canonicalCards(cards)
	}
	return nil, fmt.Errorf("a deck needs a code or cards")
}

// Hash returns a digest of the content that changes whenever anything in it
// changes; it decides whether seeding publishes a new catalog version.
func (c *Content) Hash() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain structs and maps of strings always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Catalog is one published version of the content, indexed for lookups.
type Catalog struct {
	Version     int       `json:"version"`
	ETag        string    `json:"etag"`
	PublishedAt time.Time `json:"publishedAt"`
	Rules       Rules     `json:"rules"`
	Towers      []Tower   `json:"towers"`
	Traps       []Trap    `json:"traps"`
	Units       []Unit    `json:"units"`
	Cards       []Card    `json:"cards"`
	// StarterDecks are shown with their canonical codes and cards.
	StarterDecks []CatalogDeck `json:"starterDecks"`

	byID    map[string]*Card
	byNumID map[uint32]*Card
}

// CatalogDeck is a deck the catalog itself defines.
type CatalogDeck struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	Default bool       `json:"default"`
	Code    string     `json:"code"`
	Cards   []DeckCard `json:"cards"`
}

// DeckCard is one entry of a deck as clients see it.
type DeckCard struct {
	CardID string `json:"cardId"`
	NumID  uint32 `json:"numId"`
	Count  int    `json:"count"`
}

// CatalogHead identifies the current catalog version without its body.
type CatalogHead struct {
	Version     int
	ETag        string
	PublishedAt time.Time
}

// CatalogETag derives the entity tag of a catalog version from its version
// number and content hash.
func CatalogETag(version int, contentHash string) string {
	return fmt.Sprintf(`"catalog-%d-%.16s"`, version, contentHash)
}

// Index returns a catalog over c without version or starter decks, which
// is enough to resolve and check decks while validating fixtures whose
// content may still have problems.
func (c *Content) Index() *Catalog { return c.index() }

// index returns a Catalog over c without version, for validation.
func (c *Content) index() *Catalog {
	cat := &Catalog{
		Rules: c.Rules, Towers: c.Towers, Traps: c.Traps, Units: c.Units, Cards: c.Cards,
		byID: make(map[string]*Card, len(c.Cards)), byNumID: make(map[uint32]*Card, len(c.Cards)),
	}
	for i := range c.Cards {
		cat.byID[c.Cards[i].ID] = &c.Cards[i]
		cat.byNumID[c.Cards[i].NumID] = &c.Cards[i]
	}
	return cat
}

// NewCatalog builds the published catalog of valid content.
func NewCatalog(c *Content, head CatalogHead) (*Catalog, error) {
	cat := c.index()
	cat.Version, cat.ETag, cat.PublishedAt = head.Version, head.ETag, head.PublishedAt.UTC()
	// Towers and traps are normalised element by element, so on copies: c
	// is read concurrently (two seeders validating one fixture set).
	cat.Towers = platform.OrEmpty(slices.Clone(cat.Towers))
	cat.Traps = platform.OrEmpty(slices.Clone(cat.Traps))
	cat.Units = platform.OrEmpty(cat.Units)
	cat.Cards = platform.OrEmpty(cat.Cards)
	for i := range cat.Towers {
		cat.Towers[i].Targets = platform.OrEmpty(cat.Towers[i].Targets)
	}
	for i := range cat.Traps {
		cat.Traps[i].Affects = platform.OrEmpty(cat.Traps[i].Affects)
	}
	cat.StarterDecks = make([]CatalogDeck, 0, len(c.StarterDecks))
	for _, d := range c.StarterDecks {
		cards, err := cat.ResolveSpec(d.DeckSpec)
		if err != nil {
			return nil, fmt.Errorf("starter deck %s: %w", d.ID, err)
		}
		code, err := EncodeDeck(cards)
		if err != nil {
			return nil, fmt.Errorf("starter deck %s: %w", d.ID, err)
		}
		cat.StarterDecks = append(cat.StarterDecks, CatalogDeck{ID: d.ID, Name: d.Name, Default: d.Default, Code: code, Cards: cat.deckCards(cards)})
	}
	return cat, nil
}

// deckCards names the cards of a deck; cards the catalog no longer has
// keep their numId and an empty cardId.
func (c *Catalog) deckCards(cards []CardCount) []DeckCard {
	out := make([]DeckCard, len(cards))
	for i, cc := range cards {
		out[i] = DeckCard{NumID: cc.NumID, Count: cc.Count}
		if card, ok := c.byNumID[cc.NumID]; ok {
			out[i].CardID = card.ID
		}
	}
	return out
}

// Reasons a deck breaks the rules; they appear in a deck's problems and in
// the details of a DECK_INVALID error.
const (
	ProblemUnknownCard   = "UNKNOWN_CARD"
	ProblemCardDisabled  = "CARD_DISABLED"
	ProblemTooManyCopies = "TOO_MANY_COPIES"
	ProblemWrongSize     = "WRONG_SIZE"
)

// DeckProblem is one rule a deck breaks.
type DeckProblem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	CardID  string `json:"cardId,omitempty"`
	NumID   uint32 `json:"numId,omitempty"`
	Count   int    `json:"count,omitempty"`
	Max     int    `json:"max,omitempty"`
	Min     int    `json:"min,omitempty"`
}

// CheckDeck returns every rule the deck breaks against this catalog, in
// card order, with the size last; nil means the deck is legal.
func (c *Catalog) CheckDeck(cards []CardCount) []DeckProblem {
	var out []DeckProblem
	total := 0
	for _, cc := range cards {
		total += cc.Count
		card, ok := c.byNumID[cc.NumID]
		if !ok {
			out = append(out, DeckProblem{Code: ProblemUnknownCard, NumID: cc.NumID,
				Message: fmt.Sprintf("card #%d does not exist in catalog version %d", cc.NumID, c.Version)})
			continue
		}
		if card.Disabled {
			msg := fmt.Sprintf("%s is disabled", card.Name)
			if card.DisabledReason != "" {
				msg += ": " + card.DisabledReason
			}
			out = append(out, DeckProblem{Code: ProblemCardDisabled, CardID: card.ID, NumID: card.NumID, Message: msg})
		}
		limit := c.Rules.Deck.MaxCopies.of(card.Rarity)
		if card.MaxCopies > 0 {
			limit = card.MaxCopies
		}
		if cc.Count > limit {
			out = append(out, DeckProblem{Code: ProblemTooManyCopies, CardID: card.ID, NumID: card.NumID, Count: cc.Count, Max: limit,
				Message: fmt.Sprintf("%d copies of %s, at most %d allowed", cc.Count, card.Name, limit)})
		}
	}
	if r := c.Rules.Deck; total < r.MinCards || total > r.MaxCards {
		need := fmt.Sprintf("%d to %d", r.MinCards, r.MaxCards)
		if r.MinCards == r.MaxCards {
			need = fmt.Sprintf("exactly %d", r.MinCards)
		}
		out = append(out, DeckProblem{Code: ProblemWrongSize, Count: total, Min: r.MinCards, Max: r.MaxCards,
			Message: fmt.Sprintf("the deck has %d cards; it needs %s", total, need)})
	}
	return out
}

// Card returns the card with the given id.
func (c *Catalog) Card(id string) (*Card, bool) {
	card, ok := c.byID[id]
	return card, ok
}
