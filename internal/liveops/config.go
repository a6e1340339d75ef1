// Package liveops holds the live-operations configuration — map seeds for
// the queues, feature flags with targeting, scheduled events and banners —
// and evaluates it for one player. Fixtures provide the defaults; the
// database keeps every published version.
package liveops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Config is one version of the live-ops configuration.
type Config struct {
	// MapSeeds choose the generated map of each map size; queues of a size
	// share its map.
	MapSeeds MapSeeds `json:"mapSeeds"`
	Flags    []Flag   `json:"flags"`
	Events   []Event  `json:"events"`
	Banners  []Banner `json:"banners"`
	// Messages go to every player's inbox while they are active.
	Messages []Message `json:"messages,omitempty"`
}

// MapSeeds are the seeds of the short and the long map.
type MapSeeds struct {
	Short int64 `json:"short"`
	Long  int64 `json:"long"`
}

// Flag types.
const (
	TypeBool   = "bool"
	TypeNumber = "number"
	TypeString = "string"
)

// Flag is a feature switch or a tunable value. Rules are tried in order;
// the first whose audience matches gives the value, else Default applies.
type Flag struct {
	Key         string `json:"key"`
	Description string `json:"description"`
	Type        string `json:"type"`
	Default     any    `json:"default"`
	// Enabled false serves Default to everyone, ignoring rules and events.
	Enabled bool   `json:"enabled"`
	Rules   []Rule `json:"rules"`
}

// Rule gives Value to the players its audience matches.
type Rule struct {
	ID       string   `json:"id"`
	Audience Audience `json:"audience"`
	Value    any      `json:"value"`
}

// Audience selects players. Every condition set must hold; an empty
// audience matches everyone.
type Audience struct {
	// Players lists nicknames or player ids.
	Players []string `json:"players,omitempty"`
	// RolloutPercent keeps a stable share of players, chosen by a hash of
	// the player id and the salt (the flag key, event id or banner id), so
	// raising it only ever adds players.
	RolloutPercent *int `json:"rolloutPercent,omitempty"`
	// MaxAccountAgeDays matches accounts created at most this many days ago.
	MaxAccountAgeDays int `json:"maxAccountAgeDays,omitempty"`
	// MinAccountAgeDays matches accounts at least this many days old.
	MinAccountAgeDays int `json:"minAccountAgeDays,omitempty"`
	// Environments matches servers running in one of these environments
	// (development, production).
	Environments []string `json:"environments,omitempty"`
}

// Event is a scheduled live event. While it runs, its flag values override
// the flags' own rules for the players in its audience, and its map seeds
// replace the default ones.
type Event struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	StartAt     time.Time      `json:"startAt"`
	EndAt       time.Time      `json:"endAt"`
	Audience    Audience       `json:"audience"`
	Flags       map[string]any `json:"flags,omitempty"`
	// Queues are featured while the event runs.
	Queues   []string  `json:"queues,omitempty"`
	MapSeeds *MapSeeds `json:"mapSeeds,omitempty"`
}

// Banner placements in the client.
const (
	PlacementHome = "home"
	PlacementPlay = "play"
	PlacementShop = "shop"
)

// Banner is a message shown in the client between StartAt and EndAt (both
// optional) to its audience; higher Priority comes first.
type Banner struct {
	ID        string     `json:"id"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	ImageURL  string     `json:"imageUrl,omitempty"`
	Link      string     `json:"link,omitempty"`
	Placement string     `json:"placement"`
	Priority  int        `json:"priority"`
	StartAt   *time.Time `json:"startAt,omitempty"`
	EndAt     *time.Time `json:"endAt,omitempty"`
	Audience  Audience   `json:"audience"`
}

type problems = platform.Problems

var key = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

func checkKey(ps *problems, path, k string, seen map[string]bool) {
	switch {
	case k == "":
		ps.Add(path, "is missing")
	case len(k) > 40 || !key.MatchString(k):
		ps.Add(path, "%q is not a lower-case slug like winter-festival (at most 40 characters)", k)
	case seen[k]:
		ps.Add(path, "duplicate id %q", k)
	}
	seen[k] = true
}

func checkText(ps *problems, path string, s string, required bool, maxLen int) {
	n := utf8.RuneCountInString(s)
	if required && strings.TrimSpace(s) == "" {
		ps.Add(path, "is missing")
	} else if n > maxLen {
		ps.Add(path, "must be at most %d characters", maxLen)
	}
}

// checkValue reports whether v fits typ. Numbers arrive as float64 from
// JSON and YAML alike.
func checkValue(typ string, v any) bool {
	switch typ {
	case TypeBool:
		_, ok := v.(bool)
		return ok
	case TypeNumber:
		_, ok := v.(float64)
		return ok
	case TypeString:
		s, ok := v.(string)
		return ok && utf8.RuneCountInString(s) <= 200
	}
	return false
}

func checkAudience(ps *problems, path string, a Audience) {
	if len(a.Players) > 1000 {
		ps.Add(path+".players", "lists more than 1000 players; use a rollout instead")
	}
	for i, p := range a.Players {
		if strings.TrimSpace(p) == "" || len(p) > 64 {
			ps.Add(fmt.Sprintf("%s.players[%d]", path, i), "must be a nickname or a player id")
		}
	}
	if a.RolloutPercent != nil && (*a.RolloutPercent < 0 || *a.RolloutPercent > 100) {
		ps.Add(path+".rolloutPercent", "%d is outside 0-100", *a.RolloutPercent)
	}
	if a.MaxAccountAgeDays < 0 || a.MinAccountAgeDays < 0 {
		ps.Add(path, "account ages cannot be negative")
	}
	if a.MaxAccountAgeDays > 0 && a.MinAccountAgeDays > a.MaxAccountAgeDays {
		ps.Add(path, "minAccountAgeDays is above maxAccountAgeDays; nobody matches")
	}
	for i, e := range a.Environments {
		if !slices.Contains(Environments, e) {
			ps.Add(fmt.Sprintf("%s.environments[%d]", path, i), "%q is not an environment (%s)", e, strings.Join(Environments, ", "))
		}
	}
}

// Environments are the values Audience.Environments accepts.
var Environments = []string{"development", "production"}

func checkLink(ps *problems, path, link string) {
	if link == "" {
		return
	}
	if strings.HasPrefix(link, "/") && !strings.HasPrefix(link, "//") {
		return
	}
	if u, err := url.Parse(link); err != nil || u.Scheme != "https" || u.Host == "" {
		ps.Add(path, "%q must be an https URL or a path starting with /", link)
	}
}

// Validate returns every problem with the configuration, or nil. queues
// lists the queue preset ids events may feature.
func (c *Config) Validate(queues []string) []platform.Problem {
	var ps problems
	if c.MapSeeds.Short <= 0 || c.MapSeeds.Long <= 0 {
		ps.Add("mapSeeds", "short and long must both be positive seeds")
	}
	flags := c.checkFlags(&ps)
	c.checkEvents(&ps, flags, queues)
	c.checkBanners(&ps)
	c.checkMessages(&ps)
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// checkFlags checks the flags and their rules, and returns them by key.
func (c *Config) checkFlags(ps *problems) map[string]*Flag {
	flags := map[string]*Flag{}
	seen := map[string]bool{}
	for i := range c.Flags {
		f := &c.Flags[i]
		p := fmt.Sprintf("flags[%d]", i)
		checkKey(ps, p+".key", f.Key, seen)
		flags[f.Key] = f
		checkText(ps, p+".description", f.Description, false, 280)
		if f.Type != TypeBool && f.Type != TypeNumber && f.Type != TypeString {
			ps.Add(p+".type", "%q is not a flag type (bool, number, string)", f.Type)
			continue
		}
		if !checkValue(f.Type, f.Default) {
			ps.Add(p+".default", "must be a %s", f.Type)
		}
		rules := map[string]bool{}
		for j, r := range f.Rules {
			rp := fmt.Sprintf("%s.rules[%d]", p, j)
			checkKey(ps, rp+".id", r.ID, rules)
			checkAudience(ps, rp+".audience", r.Audience)
			if !checkValue(f.Type, r.Value) {
				ps.Add(rp+".value", "must be a %s", f.Type)
			}
		}
	}
	return flags
}

// checkEvents checks the events against the flags they set and the
// queues they feature.
func (c *Config) checkEvents(ps *problems, flags map[string]*Flag, queues []string) {
	seen := map[string]bool{}
	for i, e := range c.Events {
		p := fmt.Sprintf("events[%d]", i)
		checkKey(ps, p+".id", e.ID, seen)
		checkText(ps, p+".name", e.Name, true, 60)
		checkText(ps, p+".description", e.Description, false, 500)
		if e.StartAt.IsZero() || e.EndAt.IsZero() || !e.EndAt.After(e.StartAt) {
			ps.Add(p, "needs startAt before endAt")
		}
		checkAudience(ps, p+".audience", e.Audience)
		for _, k := range sortedKeys(e.Flags) {
			f, ok := flags[k]
			switch {
			case !ok:
				ps.Add(p+".flags."+k, "unknown flag %q", k)
			case !checkValue(f.Type, e.Flags[k]):
				ps.Add(p+".flags."+k, "must be a %s like the flag", f.Type)
			}
		}
		for j, q := range e.Queues {
			if !slices.Contains(queues, q) {
				ps.Add(fmt.Sprintf("%s.queues[%d]", p, j), "unknown queue %q", q)
			}
		}
		if e.MapSeeds != nil && (e.MapSeeds.Short < 0 || e.MapSeeds.Long < 0) {
			ps.Add(p+".mapSeeds", "seeds cannot be negative (0 keeps the default)")
		}
	}
}

func (c *Config) checkBanners(ps *problems) {
	seen := map[string]bool{}
	for i, b := range c.Banners {
		p := fmt.Sprintf("banners[%d]", i)
		checkKey(ps, p+".id", b.ID, seen)
		checkText(ps, p+".title", b.Title, true, 80)
		checkText(ps, p+".body", b.Body, false, 500)
		checkLink(ps, p+".link", b.Link)
		if b.ImageURL != "" {
			checkLink(ps, p+".imageUrl", b.ImageURL)
		}
		if b.Placement != PlacementHome && b.Placement != PlacementPlay && b.Placement != PlacementShop {
			ps.Add(p+".placement", "%q is not a placement (home, play, shop)", b.Placement)
		}
		if b.StartAt != nil && b.EndAt != nil && !b.EndAt.After(*b.StartAt) {
			ps.Add(p, "endAt must be after startAt")
		}
		checkAudience(ps, p+".audience", b.Audience)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Hash returns a digest that changes whenever the configuration does.
func (c *Config) Hash() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // validated configurations hold only JSON values
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
