package gamemap

import (
	"github.com/towerdefence/platformctl/internal/platform"
)

// Size names a map preset.
type Size string

// The map presets.
const (
	Short Size = "short"
	Long  Size = "long"
)

// Sizes lists every preset, short first.
var Sizes = []Size{Short, Long}

// SizeSpec describes the grid a preset generates.
type SizeSpec struct {
	Width     int
	Height    int
	Lanes     int
	LaneWidth int
}

// preset holds everything the generator needs for one size.
type preset struct {
	SizeSpec
	minRun, maxRun int // horizontal run length between turns, inclusive
	mergeCols      int // lanes head for the goal row in the last mergeCols anchor columns
	// stream is the second PCG seed word, so that one seed gives unrelated
	// draws for the two sizes.
	stream uint64
}

var (
	shortPreset = preset{
		SizeSpec:  SizeSpec{Width: 32, Height: 18, Lanes: 2, LaneWidth: 3},
		minRun:    3,
		maxRun:    6,
		mergeCols: 6,
		stream:    0x73686f7274, // "short"
	}
	longPreset = preset{
		SizeSpec:  SizeSpec{Width: 48, Height: 27, Lanes: 3, LaneWidth: 3},
		minRun:    3,
		maxRun:    7,
		mergeCols: 9,
		stream:    0x6c6f6e67, // "long"
	}
)

func (s Size) preset() (preset, bool) {
	switch s {
	case Short:
		return shortPreset, true
	case Long:
		return longPreset, true
	}
	return preset{}, false
}

// Spec returns the grid of the preset, and false for an unknown size.
func (s Size) Spec() (SizeSpec, bool) {
	p, ok := s.preset()
	return p.SizeSpec, ok
}

// Valid reports whether s names a preset.
func (s Size) Valid() bool {
	_, ok := s.preset()
	return ok
}

// ParseSize returns the preset named by s, or a VALIDATION_ERROR for the
// field "size".
func ParseSize(s string) (Size, error) {
	if sz := Size(s); sz.Valid() {
		return sz, nil
	}
	return "", platform.Invalid("size", `must be "short" or "long"`)
}
