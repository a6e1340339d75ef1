package liveops_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/liveops"
)

// TestRolloutBucketsArePinned checks buckets computed by an independent
// implementation of FNV-1a (Python): a player at bucket b is in a rollout
// of b+1 percent and out of one of b percent. If this fails, every
// percentage rollout reshuffles its players on upgrade.
func TestRolloutBucketsArePinned(t *testing.T) {
	cases := []struct {
		salt, player string
		bucket       int
	}{
		{"store-v2", "6f1c2a4e-3b7d-4f0a-9c55-1d2e3f405162", 51},
		{"match-xp-multiplier", "00000000-0000-0000-0000-000000000001", 94},
		{"winter-siege", "ffffffff-ffff-4fff-bfff-ffffffffffff", 88},
	}
	for _, tc := range cases {
		s := liveops.Subject{PlayerID: tc.player}
		in := liveops.Audience{RolloutPercent: ptr(tc.bucket + 1)}
		out := liveops.Audience{RolloutPercent: ptr(tc.bucket)}
		if !in.Matches(s, tc.salt, t0) || out.Matches(s, tc.salt, t0) {
			t.Errorf("%s/%s: not at bucket %d", tc.salt, tc.player, tc.bucket)
		}
	}
}

// TestRolloutIsDeterministicAndProportional evaluates 20 000 players
// (ids derived from their index, so the run is reproducible) at several
// percentages: each player's answer never changes between evaluations, the
// share served is within 1.5 points of the percentage, and raising the
// percentage only adds players; a different salt picks other players.
func TestRolloutIsDeterministicAndProportional(t *testing.T) {
	const players = 20000
	ids := make([]string, players)
	for i := range ids {
		ids[i] = uuid.NewSHA1(uuid.NameSpaceOID, []byte{byte(i >> 16), byte(i >> 8), byte(i)}).String()
	}
	prev := make([]bool, players)
	for _, p := range []int{0, 1, 10, 25, 50, 99, 100} {
		a := liveops.Audience{RolloutPercent: ptr(p)}
		in := 0
		for i, id := range ids {
			s := liveops.Subject{PlayerID: id}
			got := a.Matches(s, "match-xp-multiplier", t0)
			if got != a.Matches(s, "match-xp-multiplier", t0) {
				t.Fatalf("player %s: two answers", id)
			}
			if got {
				in++
			}
			if prev[i] && !got {
				t.Fatalf("raising the rollout to %d%% dropped player %s", p, id)
			}
			prev[i] = got
		}
		if share := float64(in) * 100 / players; math.Abs(share-float64(p)) > 1.5 {
			t.Errorf("rollout %d%% served %.2f%% of players", p, share)
		}
	}
	half := liveops.Audience{RolloutPercent: ptr(50)}
	same := 0
	for _, id := range ids {
		s := liveops.Subject{PlayerID: id}
		if half.Matches(s, "store-v2", t0) == half.Matches(s, "match-xp-multiplier", t0) {
			same++
		}
	}
	if share := float64(same) / players; share > 0.55 || share < 0.45 {
		t.Errorf("two salts at 50%% agree on %.1f%% of players; want about half", share*100)
	}
}

func TestAudienceConditions(t *testing.T) {
	s := liveops.Subject{PlayerID: "p1", Nickname: "Ann", CreatedAt: t0.Add(-10 * 24 * time.Hour), Environment: "production"}
	cases := []struct {
		name string
		a    liveops.Audience
		want bool
	}{
		{"everyone", liveops.Audience{}, true},
		{"environment", liveops.Audience{Environments: []string{"production"}}, true},
		{"other environment", liveops.Audience{Environments: []string{"development"}}, false},
		{"allow-list by id", liveops.Audience{Players: []string{"p1"}}, true},
		{"allow-list by nickname", liveops.Audience{Players: []string{"ann"}}, true},
		{"not on allow-list", liveops.Audience{Players: []string{"p2"}}, false},
		{"new accounts", liveops.Audience{MaxAccountAgeDays: 7}, false},
		{"old accounts", liveops.Audience{MinAccountAgeDays: 7}, true},
		{"all conditions", liveops.Audience{Players: []string{"p1"}, Environments: []string{"development"}}, false},
	}
	for _, tc := range cases {
		if got := tc.a.Matches(s, "salt", t0); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
