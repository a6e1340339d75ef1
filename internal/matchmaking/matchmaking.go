// Package matchmaking owns the queue presets and the maps they are played
// on. It serves the queues response from memory: the body is encoded once
// per pair of map seeds and rebuilt only when the seeds change.
package matchmaking

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/towerdefence/platformctl/internal/gamemap"
)

// Queue modes.
const (
	ModeCasual = "casual"
	ModeRanked = "ranked"
	ModeCustom = "custom"
)

// Queue is one matchmaking queue preset.
type Queue struct {
	ID                string       `json:"id"`
	Name              string       `json:"name"`
	Mode              string       `json:"mode"`
	MapSize           gamemap.Size `json:"mapSize"`
	TeamSize          int          `json:"teamSize"`
	PartySize         PartySize    `json:"partySize"`
	Rated             bool         `json:"rated"`
	RequiresValidDeck bool         `json:"requiresValidDeck"`
	Enabled           bool         `json:"enabled"`
}

// PartySize bounds how many players may queue together.
type PartySize struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Presets returns the five queue presets, in the order clients list them.
// Short maps are played one against one, long maps two against two; ranked
// queues are rated and, like casual ones, need a valid deck; a custom lobby's
// host sets its own rules.
func Presets() []Queue {
	return []Queue{
		{ID: "casual-short", Name: "Casual · short map", Mode: ModeCasual, MapSize: gamemap.Short, TeamSize: 1,
			PartySize: PartySize{1, 1}, RequiresValidDeck: true, Enabled: true},
		{ID: "casual-long", Name: "Casual · long map", Mode: ModeCasual, MapSize: gamemap.Long, TeamSize: 2,
			PartySize: PartySize{1, 2}, RequiresValidDeck: true, Enabled: true},
		{ID: "ranked-short", Name: "Ranked · short map", Mode: ModeRanked, MapSize: gamemap.Short, TeamSize: 1,
			PartySize: PartySize{1, 1}, Rated: true, RequiresValidDeck: true, Enabled: true},
		{ID: "ranked-long", Name: "Ranked · long map", Mode: ModeRanked, MapSize: gamemap.Long, TeamSize: 2,
			PartySize: PartySize{1, 2}, Rated: true, RequiresValidDeck: true, Enabled: true},
		{ID: "custom-hosted", Name: "Custom lobby", Mode: ModeCustom, MapSize: gamemap.Long, TeamSize: 2,
			PartySize: PartySize{1, 4}, Enabled: true},
	}
}

// SeedSource says which seeds the current short and long maps have. It may
// answer differently over time (live operations change the maps without a
// restart); the service rebuilds its response when the answer changes.
// MapSeeds is called on every request, so an implementation backed by a
// database must answer from memory (refreshing in the background or on
// change) rather than query per call.
type SeedSource interface {
	MapSeeds(ctx context.Context) (short, long uint64, err error)
}

// StaticSeeds is a SeedSource that never changes: the configured seeds.
type StaticSeeds struct{ Short, Long uint64 }

// MapSeeds implements SeedSource.
func (s StaticSeeds) MapSeeds(context.Context) (uint64, uint64, error) { return s.Short, s.Long, nil }

// Response is the queues response.
type Response struct {
	Queues []Queue `json:"queues"`
	Maps   Maps    `json:"maps"`
}

// Maps holds the map of each size.
type Maps struct {
	Short Map `json:"short"`
	Long  Map `json:"long"`
}

// Map is a layout with its analysis.
type Map struct {
	Layout   gamemap.MapLayout         `json:"layout"`
	Analysis gamemap.MapLayoutAnalysis `json:"analysis"`
}

// Snapshot is an encoded queues response; it is shared and must not be
// modified.
type Snapshot struct {
	ShortSeed, LongSeed uint64
	Response            Response
	// JSON is the encoded Response, ETag its strong entity tag.
	JSON []byte
	ETag string
	// Gzip is JSON compressed with gzip, GzipETag its own strong tag.
	Gzip     []byte
	GzipETag string
}

// Service serves the queues response.
type Service struct {
	seeds   SeedSource
	current atomic.Pointer[Snapshot]
	mu      sync.Mutex // one rebuild at a time
}

// New returns a service whose maps follow seeds.
func New(seeds SeedSource) *Service {
	return &Service{seeds: seeds}
}

// Queues returns the response for the current seeds, from memory unless the
// seeds changed since the last call. It is safe for concurrent use.
func (s *Service) Queues(ctx context.Context) (*Snapshot, error) {
	short, long, err := s.seeds.MapSeeds(ctx)
	if err != nil {
		return nil, fmt.Errorf("matchmaking: map seeds: %w", err)
	}
	if snap := s.current.Load(); snap != nil && snap.ShortSeed == short && snap.LongSeed == long {
		return snap, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap := s.current.Load(); snap != nil && snap.ShortSeed == short && snap.LongSeed == long {
		return snap, nil
	}
	snap, err := build(short, long)
	if err != nil {
		return nil, err
	}
	s.current.Store(snap)
	return snap, nil
}

func build(short, long uint64) (*Snapshot, error) {
	var r Response
	r.Queues = Presets()
	r.Maps.Short.Layout, r.Maps.Short.Analysis = gamemap.GenerateAnalyzed(gamemap.Short, short)
	r.Maps.Long.Layout, r.Maps.Long.Analysis = gamemap.GenerateAnalyzed(gamemap.Long, long)
	body, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("matchmaking: encode queues: %w", err)
	}
	body = append(body, '\n')
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(body) //nolint:errcheck // writes to memory
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("matchmaking: compress queues: %w", err)
	}
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:16])
	return &Snapshot{
		ShortSeed: short,
		LongSeed:  long,
		Response:  r,
		JSON:      body,
		ETag:      `"` + tag + `"`,
		Gzip:      gz.Bytes(),
		GzipETag:  `"` + tag + `-gzip"`,
	}, nil
}
