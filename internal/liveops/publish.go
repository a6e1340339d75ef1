package liveops

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Audit actions of the live-ops configuration.
const (
	ActionPublish = "liveops.publish"
	ActionSetSeed = "liveops.set-seed"
)

// CodeInvalidConfig is returned for a configuration that fails Validate;
// details.configProblems lists every problem. The key is its own, not
// "problems", because the API's "problems" are a deck's broken rules, a
// different shape.
const CodeInvalidConfig = "LIVEOPS_CONFIG_INVALID"

// DetailConfigProblems is the details key of CodeInvalidConfig's problems.
const DetailConfigProblems = "configProblems"

// next builds the operator version after head with body cfg.
func (s *Service) next(head *Head, cfg Config, actor, description string) *Publication {
	v := 1
	if head != nil {
		v = head.Version + 1
	}
	hash := cfg.Hash()
	return &Publication{Config: cfg, Head: Head{Version: v, ETag: ETag(v, hash), Hash: hash, Source: SourceOperator,
		PublishedAt: s.now().UTC().Truncate(time.Second), PublishedBy: actor, Description: description}}
}

// publish holds the publication lock, calls next with the newest version
// and its body (both nil when none exists), and inserts what next returns
// together with its audit entry, in one transaction. When next returns
// nil nothing is written. Concurrent publications therefore apply one
// after the other and none is lost.
func (s *Service) publish(ctx context.Context, next func(head *Head, cfg *Config) (*Publication, *audit.Entry, error)) (*Head, error) {
	var out *Head
	err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.LockPublications(ctx); err != nil {
			return err
		}
		head, cfg, err := tx.LatestLiveOps(ctx)
		if err != nil {
			return err
		}
		p, e, err := next(head, cfg)
		if err != nil || p == nil {
			return err
		}
		if err := tx.InsertLiveOps(ctx, p); err != nil {
			return err
		}
		if err := tx.InsertAudit(ctx, e); err != nil {
			return err
		}
		out = &p.Head
		return nil
	})
	return out, err
}

// Publish publishes cfg as the next version, by an operator, recording
// actor and reason in the audit trail in the same transaction. It is how
// an operator replaces the whole configuration, for example to roll back
// to an earlier body. queues lists the queue preset ids events may name.
// A configuration equal to the newest one publishes nothing and returns
// the newest head.
func (s *Service) Publish(ctx context.Context, actor string, cfg Config, queues []string, reason string) (*Head, error) {
	reason = strings.TrimSpace(reason)
	if err := audit.CheckActorReason(actor, reason); err != nil {
		return nil, err
	}
	if ps := cfg.Validate(queues); ps != nil {
		return nil, platform.Errorf(platform.KindInvalid, CodeInvalidConfig, "the live-ops configuration is invalid: %s", ps[0]).
			WithDetails(DetailConfigProblems, ps)
	}
	var unchanged *Head
	published, err := s.publish(ctx, func(head *Head, _ *Config) (*Publication, *audit.Entry, error) {
		hash := cfg.Hash()
		if head != nil && head.Hash == hash {
			unchanged = head
			return nil, nil, nil
		}
		desc := "configuration published"
		if reason != "" {
			desc += " (" + reason + ")"
		}
		p := s.next(head, cfg, actor, desc)
		e := &audit.Entry{At: p.Head.PublishedAt, Actor: actor, Action: ActionPublish, Target: "liveops", Reason: reason,
			Details: map[string]string{"version": strconv.Itoa(p.Head.Version), "contentHash": hash}}
		return p, e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("publish live-ops configuration: %w", err)
	}
	s.published()
	if published == nil {
		return unchanged, nil
	}
	return published, nil
}

// SeedChange is the result of SetSeed.
type SeedChange struct {
	Size    gamemap.Size `json:"size"`
	From    int64        `json:"from"`
	To      int64        `json:"to"`
	Changed bool         `json:"changed"`
	Version int          `json:"version"`
	// OverriddenBy names the running event whose own seed the queues use
	// for this size until it ends; empty when the new seed applies now.
	OverriddenBy string     `json:"overriddenBy,omitempty"`
	Map          MapSummary `json:"map"`
}

// SetSeed publishes a new version with the map seed of one size changed,
// recording actor and reason in the audit trail in the same transaction.
// Setting the seed a size already has publishes and records nothing. The
// queues read the newest version on every request, so every server plays
// the new map at once, without a restart.
func (s *Service) SetSeed(ctx context.Context, actor, size string, seed int64, reason string) (*SeedChange, error) {
	sz, err := gamemap.ParseSize(size)
	if err != nil {
		return nil, err
	}
	if seed <= 0 {
		return nil, platform.Invalid("seed", "must be a positive integer")
	}
	reason = strings.TrimSpace(reason)
	if err := audit.CheckActorReason(actor, reason); err != nil {
		return nil, err
	}
	change := &SeedChange{Size: sz, To: seed}
	var cfg Config
	_, err = s.publish(ctx, func(head *Head, cur *Config) (*Publication, *audit.Entry, error) {
		if head == nil {
			return nil, nil, ErrNotPublished
		}
		cfg = *cur
		field := &cfg.MapSeeds.Short
		if sz == gamemap.Long {
			field = &cfg.MapSeeds.Long
		}
		change.From, change.Version = *field, head.Version
		if *field == seed {
			return nil, nil, nil
		}
		*field = seed
		desc := fmt.Sprintf("map seed %s: %d -> %d", sz, change.From, seed)
		if reason != "" {
			desc += " (" + reason + ")"
		}
		p := s.next(head, cfg, actor, desc)
		e := &audit.Entry{At: p.Head.PublishedAt, Actor: actor, Action: ActionSetSeed, Target: "map-seed:" + string(sz), Reason: reason,
			Details: map[string]string{
				"size": string(sz), "from": strconv.FormatInt(change.From, 10), "to": strconv.FormatInt(seed, 10),
				"version": strconv.Itoa(p.Head.Version),
			}}
		change.Changed, change.Version = true, p.Head.Version
		return p, e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("set map seed: %w", err)
	}
	s.published()
	if eff, by := effectiveSeed(&cfg, sz, s.now()); eff != seed {
		change.OverriddenBy = by
	}
	change.Map = SummarizeSeed(sz, seed)
	return change, nil
}

// effectiveSeed returns the seed the queues use for size at now
// (MapSeedsAt), and the id of the running event that sets it ("" for the
// configured seed).
func effectiveSeed(c *Config, size gamemap.Size, now time.Time) (int64, string) {
	pick := func(m MapSeeds) int64 {
		if size == gamemap.Long {
			return m.Long
		}
		return m.Short
	}
	by := ""
	if e := c.seedEvent(now); e != nil && pick(*e.MapSeeds) > 0 {
		by = e.ID
	}
	return pick(c.MapSeedsAt(now)), by
}

// MapSeeds implements matchmaking.SeedSource: the seeds the queues play
// now, the configured ones or those a running event sets (MapSeedsAt,
// evaluated at every call, so an event starts and ends on time). Before
// any version is published they are Options.DefaultShortSeed and
// DefaultLongSeed. The queues route asks on every request, so the newest
// version number is read from the database at most once per
// Options.SeedRefresh: a seed published by another process is played
// within that time, one published through this service at once.
func (s *Service) MapSeeds(ctx context.Context) (short, long uint64, err error) {
	head, cfg, err := s.current(ctx, s.opts.SeedRefresh)
	if err != nil {
		return 0, 0, err
	}
	if head == nil {
		return s.opts.DefaultShortSeed, s.opts.DefaultLongSeed, nil
	}
	m := cfg.MapSeedsAt(s.now().UTC())
	return uint64(m.Short), uint64(m.Long), nil
}
