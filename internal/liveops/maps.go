package liveops

import (
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
)

// MapSummary is what an operator or QA needs to know about a generated
// map without its cells: its grid, its cell counts and its routes.
type MapSummary struct {
	Size             gamemap.Size          `json:"size"`
	Seed             int64                 `json:"seed"`
	Version          int                   `json:"version"`
	Width            int                   `json:"width"`
	Height           int                   `json:"height"`
	Lanes            int                   `json:"lanes"`
	PathCellCount    int                   `json:"pathCellCount"`
	BuildCellCount   int                   `json:"buildCellCount"`
	OverlapCellCount int                   `json:"overlapCellCount"`
	BuildZoneCount   int                   `json:"buildZoneCount"`
	ShortestRoute    int                   `json:"shortestRoute"`
	LongestRoute     int                   `json:"longestRoute"`
	Routes           []gamemap.RouteLength `json:"routes"`
	Valid            bool                  `json:"valid"`
	ProblemCount     int                   `json:"problemCount"`
}

// Summarize condenses a layout and its analysis. ShortestRoute and
// LongestRoute are the extreme small-unit route lengths over the lanes (0
// when no lane has a route).
func Summarize(l gamemap.MapLayout, a gamemap.MapLayoutAnalysis) MapSummary {
	s := MapSummary{
		Size: l.Size, Seed: int64(l.Seed), Version: l.Version, Width: l.Width, Height: l.Height, Lanes: len(l.Lanes),
		PathCellCount: a.PathCellCount, BuildCellCount: a.BuildCellCount, OverlapCellCount: a.OverlapCellCount,
		BuildZoneCount: len(l.BuildZones), Routes: platform.OrEmpty(a.Routes), Valid: a.Valid, ProblemCount: len(a.Problems),
	}
	for _, r := range a.Routes {
		if r.SmallUnitLength == nil {
			continue
		}
		n := *r.SmallUnitLength
		if s.ShortestRoute == 0 || n < s.ShortestRoute {
			s.ShortestRoute = n
		}
		s.LongestRoute = max(s.LongestRoute, n)
	}
	return s
}

// SummarizeSeed generates the map of size and seed and summarizes it.
// Live-ops seeds are positive int64s, a subset of the engine's uint64s.
func SummarizeSeed(size gamemap.Size, seed int64) MapSummary {
	return Summarize(gamemap.GenerateAnalyzed(size, uint64(seed)))
}
