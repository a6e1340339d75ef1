// Package gamemap generates, analyses, renders and validates placements on
// the seeded tower-defence maps. It is pure (no I/O, no database, no clock)
// and imports nothing of ours but the shared error vocabulary, so the
// designers' `platformctl map` commands and the queues route share it.
//
// # Sizes
//
//	size   grid    lanes  lane width  merge zone
//	short  32×18   2      3           last 6 anchor columns
//	long   48×27   3      3           last 9 anchor columns
//
// Coordinates: x is the column from the left, y the row from the top, both
// from 0. Every cell list is sorted row-major (by y, then x) without
// duplicates, and empty lists encode as [], never null.
//
// # Generation
//
// One math/rand/v2 PCG stream per map, seeded with (seed, a constant per
// size), drives everything through IntN only, in a fixed call order; no
// floats, no map iteration, no word-size dependent calls. Lane i owns the
// horizontal band of rows [i·H/L, (i+1)·H/L) and keeps its anchors (the
// top-left cells of its 3×3 squares) at least one row clear of the next
// band. From a spawn on the left edge it walks right in runs of a few
// steps, turning to a new random row of its band after each run; in the
// merge zone it turns towards the goal row instead, and every lane ends on
// the same goal on the right edge. The walk is 4-connected and never
// revisits an anchor; the lane's cells are the union of its squares.
//
// Lanes meet only in the merge zone. A cell claimed by two or more lanes is
// one path cell, listed once in OverlapCells. Build cells are the cells of
// no lane with a lane cell among their 8 neighbours; build zones are their
// 4-connected groups, numbered in row-major order of their first cell,
// each listing the lanes it touches.
//
// The generator analyses its own draw and redraws from the same stream when
// the draw is invalid or unfair (the longest small-unit route more than 25%
// longer than the shortest), so a seed is never returned broken; after 32
// failed draws it would fall back to straight lanes, which satisfy every
// invariant by construction (no seed tested so far needs it).
//
// # Routes
//
// A small unit occupies one cell, a large unit a 2×2 square named by its
// top-left cell. A lane's route lengths are breadth-first distances in
// 4-neighbour steps from its spawn to its goal over the lane's own cells
// (for a large unit: over top-left cells whose whole square is lane cells).
// The centerline is itself a large-unit route, so generated lanes always
// have both.
//
// # Analysis
//
// Analyze accepts any layout, hand-edited or hostile, never panics, bounds
// its work by MaxDimension and MaxLanes, and reports Problems with stable
// codes (the Problem* constants). Valid is true exactly when there are none.
//
// # Placement
//
// Towers stand on build cells, traps on lane cells outside every spawn and
// goal footprint, never two structures on one cell. Every structure blocks
// its cell, so a trap narrows its corridor; a trap that would leave any
// lane without a small-unit or a large-unit route is refused. Board
// prepares a layout once (Check reads a few bytes per lane, see Board);
// ValidatePlacement is the one-call form.
//
// # Versions
//
// Version names the algorithm. Golden files pin the JSON of a few seeds
// byte for byte and a digest pins seeds 0..999 of each size; any change that
// moves them must bump Version, so a (size, seed, version) triple names one
// map forever.
package gamemap
