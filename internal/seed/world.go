package seed

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/towerdefence/platformctl/internal/account"
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
// sizes and ranked decks.
func (w *World) validate(content *player.Content, queues player.Queues) []player.Problem {
	var ps problems
	cat := content.Index()
	known := map[string]*WorldPlayer{}
	emails := map[string]bool{}
	validDefault := map[string]bool{}
	starterDefault := slices.ContainsFunc(content.StarterDecks, func(d player.StarterDeck) bool { return d.Default })
	for i := range w.Players {
		p := &w.Players[i]
		path := fmt.Sprintf("players[%d]", i)
		if err := account.ValidateNickname(p.Nickname); err != nil {
			ps.Add(path+".nickname", "%s", problemText(err))
		} else if known[account.NicknameKey(p.Nickname)] != nil {
			ps.Add(path+".nickname", "duplicate nickname %q", p.Nickname)
		}
		known[account.NicknameKey(p.Nickname)] = p
		if err := account.ValidateName(p.Name); err != nil {
			ps.Add(path+".name", "%s", problemText(err))
		}
		email := account.NormalizeEmail(p.Email)
		if !account.ValidEmail(email) {
			ps.Add(path+".email", "%q is not an email address", p.Email)
		} else if emails[email] {
			ps.Add(path+".email", "duplicate email %q", p.Email)
		}
		emails[email] = true
		if err := account.CheckPassword(p.Password); err != nil {
			ps.Add(path+".password", "%s", problemText(err))
		}
		if p.PasswordHash != "" {
			if err := account.CheckHash(p.PasswordHash); err != nil {
				ps.Add(path+".passwordHash", "%v; expected an argon2id PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$key)", err)
			}
		}
		validDefault[account.NicknameKey(p.Nickname)] = starterDefault
		codes, defaults := map[string]bool{}, 0
		for j, d := range p.Decks {
			dp := fmt.Sprintf("%s.decks[%d]", path, j)
			if strings.TrimSpace(d.Name) == "" || len([]rune(d.Name)) > player.MaxDeckNameLen {
				ps.Add(dp+".name", "must be 1-%d characters", player.MaxDeckNameLen)
			}
			cards, err := cat.ResolveSpec(d.DeckSpec)
			if err != nil {
				ps.Add(dp, "%v", err)
				continue
			}
			for _, prob := range cat.CheckDeck(cards) {
				ps.Add(dp, "%s", prob.Message)
			}
			code, _ := player.EncodeDeck(cards)
			if codes[code] {
				ps.Add(dp, "is the same deck as an earlier one")
			}
			codes[code] = true
			if d.Default {
				defaults++
			}
		}
		if defaults > 1 {
			ps.Add(path+".decks", "at most one deck can be the default, found %d", defaults)
		}
		if n := len(p.Decks) + len(content.StarterDecks); n > player.DefaultLimits.MaxDecks {
			ps.Add(path+".decks", "with the starter decks the player would have %d decks, above the limit of %d", n, player.DefaultLimits.MaxDecks)
		}
	}
	ref := func(path, nick string) bool {
		if known[account.NicknameKey(nick)] == nil {
			ps.Add(path, "unknown player %q", nick)
			return false
		}
		return true
	}
	pairs := map[string]string{}
	pair := func(path, kind, a, b string) {
		okA, okB := ref(path, a), ref(path, b)
		if !okA || !okB {
			return
		}
		if account.NicknameKey(a) == account.NicknameKey(b) {
			ps.Add(path, "a player cannot be in a %s with themselves", kind)
			return
		}
		if prev, dup := pairs[pairKey(a, b)]; dup {
			ps.Add(path, "%s and %s already have a %s in this file", a, b, prev)
			return
		}
		pairs[pairKey(a, b)] = kind
	}
	for i, f := range w.Friendships {
		path := fmt.Sprintf("friendships[%d]", i)
		if len(f) != 2 {
			ps.Add(path, "must name exactly two players")
			continue
		}
		pair(path, "friendship", f[0], f[1])
	}
	for i, r := range w.Requests {
		pair(fmt.Sprintf("requests[%d]", i), "friend request", r.From, r.To)
	}
	for i, b := range w.Blocks {
		pair(fmt.Sprintf("blocks[%d]", i), "block", b.By, b.Target)
	}

	ids, inLobby := map[string]bool{}, map[string]string{}
	for i, l := range w.Lobbies {
		path := fmt.Sprintf("lobbies[%d]", i)
		switch {
		case !lobbyID.MatchString(l.ID) || len(l.ID) > 40:
			ps.Add(path+".id", "%q is not a lower-case slug", l.ID)
		case ids[l.ID]:
			ps.Add(path+".id", "duplicate id %q", l.ID)
		}
		ids[l.ID] = true
		var q *player.Queue
		for _, cand := range queues.Queues() {
			if cand.ID == l.Queue {
				q = &cand
			}
		}
		if q == nil {
			ps.Add(path+".queue", "unknown queue %q", l.Queue)
		}
		if !slices.Contains(player.LobbyVisibilities, l.Visibility) {
			ps.Add(path+".visibility", "%q is not a visibility (public, friends, private)", l.Visibility)
		}
		everyone := append([]string{l.Host}, l.Members...)
		for j, nick := range everyone {
			mp := path + ".host"
			if j > 0 {
				mp = fmt.Sprintf("%s.members[%d]", path, j-1)
			}
			if !ref(mp, nick) {
				continue
			}
			key := account.NicknameKey(nick)
			if other, dup := inLobby[key]; dup {
				ps.Add(mp, "%s is already in lobby %s; a player is in one lobby at a time", nick, other)
			}
			inLobby[key] = l.ID
			if j > 0 && pairs[pairKey(l.Host, nick)] == "block" {
				ps.Add(mp, "%s and the host %s block each other", nick, l.Host)
			}
			if q != nil && q.RequiresValidDeck && !w.hasValidDefault(cat, key, validDefault[key]) {
				ps.Add(mp, "%s has no valid default deck, which queue %s requires", nick, q.ID)
			}
		}
		if q != nil && len(everyone) > q.PartySize {
			ps.Add(path+".members", "%d players exceed the party size %d of %s", len(everyone), q.PartySize, q.ID)
		}
	}
	return ps
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
