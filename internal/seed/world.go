package seed

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
)

// World is the development world: sample players and what connects them.
type World struct {
	Players     []WorldPlayer `json:"players"`
	Friendships [][]string    `json:"friendships"`
	Requests    []Request     `json:"requests"`
	Blocks      []Block       `json:"blocks"`
	Lobbies     []WorldLobby  `json:"lobbies"`
}

// WorldPlayer is a sample player account.
type WorldPlayer struct {
	Nickname string `json:"nickname"`
	Name     string `json:"name"`
	Email    string `json:"email"`
	// Password is what the player signs in with; the testing metadata
	// publishes it.
	Password string `json:"password"`
	// PasswordHash, when set, is the argon2id PHC string of Password and
	// is stored as is, so seeding does not hash. Validation checks its
	// form only: telling which password it is of would cost the hashing it
	// saves.
	PasswordHash string      `json:"passwordHash"`
	Decks        []WorldDeck `json:"decks"`
}

// WorldDeck is a deck of a sample player.
type WorldDeck struct {
	Name    string `json:"name"`
	Default bool   `json:"default"`
	player.DeckSpec
}

// Request is a pending friend request.
type Request struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Block is one player blocking another.
type Block struct {
	By     string `json:"by"`
	Target string `json:"target"`
}

// WorldLobby is an open lobby.
type WorldLobby struct {
	ID         string   `json:"id"`
	Host       string   `json:"host"`
	Queue      string   `json:"queue"`
	Visibility string   `json:"visibility"`
	Members    []string `json:"members"`
}

type problems = platform.Problems

var lobbyID = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// pairKey names an unordered pair of nicknames.
func pairKey(a, b string) string {
	a, b = account.NicknameKey(a), account.NicknameKey(b)
	if a > b {
		a, b = b, a
	}
	return a + "+" + b
}

// validate checks the world against the catalog and the queues: account
// rules, unknown players, one relationship per pair, deck legality, lobby
// sizes and ranked decks. The rules themselves belong to account and
// player; validate only says where in the file each one is broken.
func (w *World) validate(content *player.Content, queues []matchmaking.Queue) []platform.Problem {
	c := &worldCheck{
		world:          w,
		content:        content,
		cat:            content.Index(),
		queues:         queues,
		known:          map[string]bool{},
		emails:         map[string]bool{},
		pairs:          map[string]string{},
		starterDefault: slices.ContainsFunc(content.StarterDecks, func(d player.StarterDeck) bool { return d.Default }),
	}
	for i := range w.Players {
		c.player(fmt.Sprintf("players[%d]", i), &w.Players[i])
	}
	c.relations()
	c.lobbies()
	return c.ps
}

// worldCheck is one validation pass over a world, collecting problems.
type worldCheck struct {
	world          *World
	content        *player.Content
	cat            *player.Catalog
	queues         []matchmaking.Queue
	ps             problems
	known          map[string]bool   // nickname keys seen so far
	emails         map[string]bool   // normalised emails seen so far
	pairs          map[string]string // pairKey -> kind of relationship
	starterDefault bool              // the starter decks include a default
}

// player checks one sample player's account fields and decks.
func (c *worldCheck) player(path string, p *WorldPlayer) {
	key := account.NicknameKey(p.Nickname)
	if err := account.ValidateNickname(p.Nickname); err != nil {
		c.ps.Add(path+".nickname", "%s", problemText(err))
	} else if c.known[key] {
		c.ps.Add(path+".nickname", "duplicate nickname %q", p.Nickname)
	}
	c.known[key] = true
	if err := account.ValidateName(p.Name); err != nil {
		c.ps.Add(path+".name", "%s", problemText(err))
	}
	email := account.NormalizeEmail(p.Email)
	if !account.ValidEmail(email) {
		c.ps.Add(path+".email", "%q is not an email address", p.Email)
	} else if c.emails[email] {
		c.ps.Add(path+".email", "duplicate email %q", p.Email)
	}
	c.emails[email] = true
	if err := account.CheckPassword(p.Password); err != nil {
		c.ps.Add(path+".password", "%s", problemText(err))
	}
	if p.PasswordHash != "" {
		if err := account.CheckHash(p.PasswordHash); err != nil {
			c.ps.Add(path+".passwordHash", "%v; expected an argon2id PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$key)", err)
		}
	}
	c.decks(path, p.Decks)
}

// decks checks a sample player's decks as importing them would: names,
// legality, duplicates, one default and the deck limit.
func (c *worldCheck) decks(path string, decks []WorldDeck) {
	codes, defaults := map[string]bool{}, 0
	for j, d := range decks {
		dp := fmt.Sprintf("%s.decks[%d]", path, j)
		if _, err := player.CleanDeckName(d.Name); err != nil || strings.TrimSpace(d.Name) == "" {
			c.ps.Add(dp+".name", "must be 1-%d printable characters", player.MaxDeckNameLen)
		}
		cards, err := c.cat.ResolveSpec(d.DeckSpec)
		if err != nil {
			c.ps.Add(dp, "%v", err)
			continue
		}
		for _, prob := range c.cat.CheckDeck(cards) {
			c.ps.Add(dp, "%s", prob.Message)
		}
		code, _ := player.EncodeDeck(cards)
		if codes[code] {
			c.ps.Add(dp, "is the same deck as an earlier one")
		}
		codes[code] = true
		if d.Default {
			defaults++
		}
	}
	if defaults > 1 {
		c.ps.Add(path+".decks", "at most one deck can be the default, found %d", defaults)
	}
	if n := len(decks) + len(c.content.StarterDecks); n > player.DefaultLimits.MaxDecks {
		c.ps.Add(path+".decks", "with the starter decks the player would have %d decks, above the limit of %d", n, player.DefaultLimits.MaxDecks)
	}
}

// ref reports whether nick names a sample player, adding a problem if not.
func (c *worldCheck) ref(path, nick string) bool {
	if !c.known[account.NicknameKey(nick)] {
		c.ps.Add(path, "unknown player %q", nick)
		return false
	}
	return true
}

// pair records one relationship of kind between a and b: both must be
// sample players, distinct, and without another relationship in the file.
func (c *worldCheck) pair(path, kind, a, b string) {
	okA, okB := c.ref(path, a), c.ref(path, b)
	switch {
	case !okA || !okB:
	case account.NicknameKey(a) == account.NicknameKey(b):
		c.ps.Add(path, "a player cannot be in a %s with themselves", kind)
	case c.pairs[pairKey(a, b)] != "":
		c.ps.Add(path, "%s and %s already have a %s in this file", a, b, c.pairs[pairKey(a, b)])
	default:
		c.pairs[pairKey(a, b)] = kind
	}
}

// relations checks friendships, requests and blocks.
func (c *worldCheck) relations() {
	for i, f := range c.world.Friendships {
		path := fmt.Sprintf("friendships[%d]", i)
		if len(f) != 2 {
			c.ps.Add(path, "must name exactly two players")
			continue
		}
		c.pair(path, "friendship", f[0], f[1])
	}
	for i, r := range c.world.Requests {
		c.pair(fmt.Sprintf("requests[%d]", i), "friend request", r.From, r.To)
	}
	for i, b := range c.world.Blocks {
		c.pair(fmt.Sprintf("blocks[%d]", i), "block", b.By, b.Target)
	}
}

// lobbies checks the open lobbies: ids, queues, visibilities, and members
// as joining would (one lobby each, no block with the host, a valid
// default deck for ranked queues, the party size).
func (c *worldCheck) lobbies() {
	ids, inLobby := map[string]bool{}, map[string]string{}
	for i, l := range c.world.Lobbies {
		path := fmt.Sprintf("lobbies[%d]", i)
		switch {
		case !lobbyID.MatchString(l.ID) || len(l.ID) > 40:
			c.ps.Add(path+".id", "%q is not a lower-case slug", l.ID)
		case ids[l.ID]:
			c.ps.Add(path+".id", "duplicate id %q", l.ID)
		}
		ids[l.ID] = true
		q := c.queue(l.Queue)
		if q == nil {
			c.ps.Add(path+".queue", "unknown queue %q", l.Queue)
		}
		if !slices.Contains(player.LobbyVisibilities, l.Visibility) {
			c.ps.Add(path+".visibility", "%q is not a visibility (public, friends, private)", l.Visibility)
		}
		everyone := append([]string{l.Host}, l.Members...)
		for j, nick := range everyone {
			mp := path + ".host"
			if j > 0 {
				mp = fmt.Sprintf("%s.members[%d]", path, j-1)
			}
			c.member(mp, l, q, nick, j == 0, inLobby)
		}
		if q != nil && len(everyone) > q.PartySize.Max {
			c.ps.Add(path+".members", "%d players exceed the party size %d of %s", len(everyone), q.PartySize.Max, q.ID)
		}
	}
}

// member checks one player of lobby l; inLobby maps each nickname key
// placed so far to its lobby id.
func (c *worldCheck) member(path string, l WorldLobby, q *matchmaking.Queue, nick string, host bool, inLobby map[string]string) {
	if !c.ref(path, nick) {
		return
	}
	key := account.NicknameKey(nick)
	if other, dup := inLobby[key]; dup {
		c.ps.Add(path, "%s is already in lobby %s; a player is in one lobby at a time", nick, other)
	}
	inLobby[key] = l.ID
	if !host && c.pairs[pairKey(l.Host, nick)] == "block" {
		c.ps.Add(path, "%s and the host %s block each other", nick, l.Host)
	}
	if q != nil && q.RequiresValidDeck && !c.world.hasValidDefault(c.cat, key, c.starterDefault) {
		c.ps.Add(path, "%s has no valid default deck, which queue %s requires", nick, q.ID)
	}
}

// queue returns the queue preset with id, or nil.
func (c *worldCheck) queue(id string) *matchmaking.Queue {
	for _, q := range c.queues {
		if q.ID == id {
			return &q
		}
	}
	return nil
}

// hasValidDefault reports whether the player's default deck — their own
// default fixture deck, else the default starter deck — is legal.
func (w *World) hasValidDefault(cat *player.Catalog, key string, starterDefault bool) bool {
	for _, p := range w.Players {
		if account.NicknameKey(p.Nickname) != key {
			continue
		}
		for _, d := range p.Decks {
			if d.Default {
				cards, err := cat.ResolveSpec(d.DeckSpec)
				return err == nil && len(cat.CheckDeck(cards)) == 0
			}
		}
	}
	return starterDefault
}

// problemText is the message of a validation error without its field name.
func problemText(err error) string {
	if pe, ok := platform.As(err); ok {
		if _, problem := pe.Fields.First(); problem != "" {
			return problem
		}
		return pe.Message
	}
	return err.Error()
}
