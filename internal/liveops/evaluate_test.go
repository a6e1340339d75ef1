package liveops

import (
	"fmt"
	"testing"
	"time"
)

func pct(n int) *int { return &n }

var (
	t0    = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	event = Event{ID: "winter", Name: "Winter", StartAt: t0.Add(-time.Hour), EndAt: t0.Add(time.Hour),
		Flags: map[string]any{"theme": "winter"}, MapSeeds: &MapSeeds{Short: 99}}
	cfg = Config{
		MapSeeds: MapSeeds{Short: 1, Long: 2},
		Flags: []Flag{
			{Key: "theme", Type: TypeString, Default: "classic", Enabled: true},
			{Key: "shop", Type: TypeBool, Default: false, Enabled: true, Rules: []Rule{
				{ID: "staff", Audience: Audience{Players: []string{"Ada"}}, Value: true},
				{ID: "half", Audience: Audience{RolloutPercent: pct(50)}, Value: true},
			}},
			{Key: "quests", Type: TypeNumber, Default: 3.0, Enabled: true, Rules: []Rule{
				{ID: "new", Audience: Audience{MaxAccountAgeDays: 7}, Value: 5.0},
			}},
			{Key: "off", Type: TypeBool, Default: false, Enabled: false, Rules: []Rule{{ID: "all", Value: true}}},
		},
		Events: []Event{event,
			{ID: "spring", Name: "Spring", StartAt: t0.Add(10 * 24 * time.Hour), EndAt: t0.Add(20 * 24 * time.Hour)},
			{ID: "far", Name: "Far", StartAt: t0.Add(60 * 24 * time.Hour), EndAt: t0.Add(70 * 24 * time.Hour)},
		},
		Banners: []Banner{
			{ID: "low", Title: "Low", Placement: PlacementHome, Priority: 1},
			{ID: "high", Title: "High", Placement: PlacementHome, Priority: 9},
			{ID: "over", Title: "Over", Placement: PlacementHome, EndAt: ptr(t0.Add(-time.Minute))},
			{ID: "vip", Title: "VIP", Placement: PlacementShop, Audience: Audience{Players: []string{"ada"}}},
		},
	}
)

func ptr(t time.Time) *time.Time { return &t }

func TestEvaluate(t *testing.T) {
	if ps := cfg.Validate(nil); ps != nil {
		t.Fatalf("test config invalid: %v", ps)
	}
	ada := Subject{PlayerID: "p-ada", Nickname: "ada", CreatedAt: t0.Add(-30 * 24 * time.Hour)}
	ev := cfg.Evaluate(3, ada, t0)
	want := map[string]FlagValue{
		"theme":  {Value: "winter", Reason: ReasonEvent, Event: "winter"},
		"shop":   {Value: true, Reason: ReasonTargetingMatch, Rule: "staff"},
		"quests": {Value: 3.0, Reason: ReasonDefault},
		"off":    {Value: false, Reason: ReasonDisabled},
	}
	for k, w := range want {
		if got := ev.Flags[k]; got != w {
			t.Errorf("%s = %+v, want %+v", k, got, w)
		}
	}
	if len(ev.Events) != 2 || ev.Events[0].ID != "winter" || ev.Events[0].Status != StatusActive || ev.Events[1].Status != StatusUpcoming {
		t.Errorf("events %+v", ev.Events)
	}
	if len(ev.Banners) != 3 || ev.Banners[0].ID != "high" {
		t.Errorf("banners %+v", ev.Banners)
	}
	newbie := Subject{PlayerID: "p-new", CreatedAt: t0.Add(-24 * time.Hour)}
	if q := cfg.Evaluate(3, newbie, t0).Flags["quests"]; q.Value != 5.0 || q.Rule != "new" {
		t.Errorf("a new player's quests: %+v", q)
	}
	if seeds := cfg.MapSeedsAt(t0); seeds != (MapSeeds{Short: 99, Long: 2}) {
		t.Errorf("map seeds during the event: %+v", seeds)
	}
	if seeds := cfg.MapSeedsAt(t0.Add(2 * time.Hour)); seeds != cfg.MapSeeds {
		t.Errorf("map seeds after the event: %+v", seeds)
	}
}

// TestRolloutIsStableAndMonotonic: a player's bucket never changes, about
// the given share falls in, and raising the percentage only adds players.
func TestRolloutIsStableAndMonotonic(t *testing.T) {
	const players = 4000
	in := func(p int) map[string]bool {
		a := Audience{RolloutPercent: pct(p)}
		got := map[string]bool{}
		for i := range players {
			id := fmt.Sprintf("player-%d", i)
			if a.Matches(Subject{PlayerID: id}, "shop", t0) {
				got[id] = true
			}
		}
		return got
	}
	ten, thirty := in(10), in(30)
	if n := len(ten); n < players*7/100 || n > players*13/100 {
		t.Errorf("10%% rollout took %d of %d", n, players)
	}
	for id := range ten {
		if !thirty[id] {
			t.Fatalf("%s is in the 10%% rollout but not the 30%% one", id)
		}
	}
	if len(in(0)) != 0 || len(in(100)) != players {
		t.Error("0% and 100% are not none and all")
	}
	// Another salt picks another set.
	other := Audience{RolloutPercent: pct(10)}
	same := 0
	for id := range ten {
		if other.Matches(Subject{PlayerID: id}, "quests", t0) {
			same++
		}
	}
	if same > len(ten)/2 {
		t.Errorf("rollouts of two flags overlap in %d of %d players", same, len(ten))
	}
}

func TestValidateConfig(t *testing.T) {
	bad := Config{
		MapSeeds: MapSeeds{Short: 0, Long: 5},
		Flags: []Flag{
			{Key: "Bad Key", Type: TypeBool, Default: false},
			{Key: "n", Type: TypeNumber, Default: "three"},
			{Key: "n", Type: "colour", Default: 1.0},
		},
		Events:  []Event{{ID: "e", Name: "E", StartAt: t0, EndAt: t0, Flags: map[string]any{"ghost": true}, Queues: []string{"nowhere"}}},
		Banners: []Banner{{ID: "b", Title: "B", Placement: "popup", Link: "javascript:alert(1)"}},
	}
	want := []string{
		"mapSeeds: short and long must both be positive seeds",
		`flags[0].key: "Bad Key" is not a lower-case slug like winter-festival (at most 40 characters)`,
		"flags[1].default: must be a number",
		`flags[2].key: duplicate id "n"`,
		`flags[2].type: "colour" is not a flag type (bool, number, string)`,
		"events[0]: needs startAt before endAt",
		`events[0].flags.ghost: unknown flag "ghost"`,
		`events[0].queues[0]: unknown queue "nowhere"`,
		`banners[0].link: "javascript:alert(1)" must be an https URL or a path starting with /`,
		`banners[0].placement: "popup" is not a placement (home, play, shop)`,
	}
	got := bad.Validate([]string{"casual-short"})
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("problem %d: %s\nwant      %s", i, got[i], want[i])
		}
	}
}
