package liveops

import (
	"hash/fnv"
	"slices"
	"strings"
	"time"
)

// Subject is the player a configuration is evaluated for.
type Subject struct {
	PlayerID  string
	Nickname  string
	CreatedAt time.Time
	// Environment is the server's environment; the live-ops service fills
	// it in.
	Environment string
}

// Why a flag has its value, in the vocabulary of OpenFeature.
const (
	ReasonDefault        = "DEFAULT"         // no rule matched
	ReasonDisabled       = "DISABLED"        // the flag is switched off
	ReasonTargetingMatch = "TARGETING_MATCH" // a rule's audience matched
	ReasonEvent          = "EVENT"           // a running event overrides it
)

// Event statuses as players see them.
const (
	StatusActive   = "active"
	StatusUpcoming = "upcoming"
)

// UpcomingWindow is how far ahead players see announced events.
const UpcomingWindow = 14 * 24 * time.Hour

// Evaluation is the configuration as one player sees it.
type Evaluation struct {
	Version int                  `json:"version"`
	Flags   map[string]FlagValue `json:"flags"`
	Events  []EventView          `json:"events"`
	Banners []BannerView         `json:"banners"`
	// Messages are the inbox messages active now.
	Messages []MessageView `json:"messages"`
}

// FlagValue is a flag's value for one player and why.
type FlagValue struct {
	Value  any    `json:"value"`
	Reason string `json:"reason"`
	// Rule or Event names what decided the value, when one did.
	Rule  string `json:"rule,omitempty"`
	Event string `json:"event,omitempty"`
}

// EventView is a running or upcoming event.
type EventView struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	StartAt     time.Time `json:"startAt"`
	EndAt       time.Time `json:"endAt"`
	Queues      []string  `json:"queues"`
}

// BannerView is a banner to show now.
type BannerView struct {
	ID        string     `json:"id"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	ImageURL  string     `json:"imageUrl,omitempty"`
	Link      string     `json:"link,omitempty"`
	Placement string     `json:"placement"`
	Priority  int        `json:"priority"`
	EndAt     *time.Time `json:"endAt,omitempty"`
}

// Matches reports whether the audience includes s at now; salt keeps the
// rollouts of different flags independent.
func (a *Audience) Matches(s Subject, salt string, now time.Time) bool {
	if len(a.Players) > 0 && !slices.ContainsFunc(a.Players, func(p string) bool {
		return p == s.PlayerID || (s.Nickname != "" && strings.EqualFold(p, s.Nickname))
	}) {
		return false
	}
	if len(a.Environments) > 0 && !slices.Contains(a.Environments, s.Environment) {
		return false
	}
	age := now.Sub(s.CreatedAt)
	if a.MaxAccountAgeDays > 0 && age > time.Duration(a.MaxAccountAgeDays)*24*time.Hour {
		return false
	}
	if a.MinAccountAgeDays > 0 && age < time.Duration(a.MinAccountAgeDays)*24*time.Hour {
		return false
	}
	if a.RolloutPercent != nil && bucket(salt, s.PlayerID) >= *a.RolloutPercent {
		return false
	}
	return true
}

// bucket places a player in 0-99 for a salt, stably across versions and
// processes.
func bucket(salt, playerID string) int {
	h := fnv.New64a()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write([]byte(playerID))
	return int(h.Sum64() % 100)
}

// Evaluate returns what s sees at now.
func (c *Config) Evaluate(version int, s Subject, now time.Time) *Evaluation {
	ev := &Evaluation{
		Version:  version,
		Flags:    make(map[string]FlagValue, len(c.Flags)),
		Events:   []EventView{},
		Banners:  []BannerView{},
		Messages: []MessageView{},
	}
	var running []*Event
	for i := range c.Events {
		e := &c.Events[i]
		if !e.Audience.Matches(s, e.ID, now) {
			continue
		}
		switch StatusAt(e.StartAt, e.EndAt, now) {
		case StatusActive:
			running = append(running, e)
			ev.Events = append(ev.Events, e.view(StatusActive))
		case StatusUpcoming:
			if e.StartAt.Sub(now) > UpcomingWindow {
				continue
			}
			ev.Events = append(ev.Events, e.view(StatusUpcoming))
		}
	}
	for i := range c.Flags {
		f := &c.Flags[i]
		ev.Flags[f.Key] = f.evaluate(s, now, running)
	}
	for _, b := range c.Banners {
		if b.Status(now) != StatusActive {
			continue
		}
		if !b.Audience.Matches(s, b.ID, now) {
			continue
		}
		ev.Banners = append(ev.Banners, BannerView{ID: b.ID, Title: b.Title, Body: b.Body, ImageURL: b.ImageURL,
			Link: b.Link, Placement: b.Placement, Priority: b.Priority, EndAt: b.EndAt})
	}
	slices.SortStableFunc(ev.Banners, func(a, b BannerView) int { return b.Priority - a.Priority })
	ev.Messages = c.activeMessages(s, now)
	return ev
}

func (e *Event) view(status string) EventView {
	queues := e.Queues
	if queues == nil {
		queues = []string{}
	}
	return EventView{ID: e.ID, Name: e.Name, Description: e.Description, Status: status,
		StartAt: e.StartAt.UTC(), EndAt: e.EndAt.UTC(), Queues: queues}
}

func (f *Flag) evaluate(s Subject, now time.Time, running []*Event) FlagValue {
	if !f.Enabled {
		return FlagValue{Value: f.Default, Reason: ReasonDisabled}
	}
	for _, e := range running {
		if v, ok := e.Flags[f.Key]; ok {
			return FlagValue{Value: v, Reason: ReasonEvent, Event: e.ID}
		}
	}
	for _, r := range f.Rules {
		if r.Audience.Matches(s, f.Key, now) {
			return FlagValue{Value: r.Value, Reason: ReasonTargetingMatch, Rule: r.ID}
		}
	}
	return FlagValue{Value: f.Default, Reason: ReasonDefault}
}

// MapSeedsAt returns the map seeds in force at now: those of the first
// running event that sets them, else the defaults. Maps are shared by every
// player of a queue, so event audiences do not apply here.
func (c *Config) MapSeedsAt(now time.Time) MapSeeds {
	seeds := c.MapSeeds
	if e := c.seedEvent(now); e != nil {
		if e.MapSeeds.Short > 0 {
			seeds.Short = e.MapSeeds.Short
		}
		if e.MapSeeds.Long > 0 {
			seeds.Long = e.MapSeeds.Long
		}
	}
	return seeds
}

// seedEvent returns the first running event that sets map seeds, or nil.
func (c *Config) seedEvent(now time.Time) *Event {
	for i := range c.Events {
		e := &c.Events[i]
		if e.MapSeeds != nil && StatusAt(e.StartAt, e.EndAt, now) == StatusActive {
			return e
		}
	}
	return nil
}
