package gamemap

import (
	"encoding/json"
	"testing"

	"github.com/towerdefence/platformctl/internal/benchcpu"
)

func benchSeeds(b *testing.B, size Size, f func(seed uint64)) {
	defer benchcpu.Report(b)()
	seed := uint64(0)
	for b.Loop() {
		f(seed)
		seed++
	}
}

func BenchmarkGenerateAnalyze(b *testing.B) {
	for _, size := range Sizes {
		b.Run(string(size), func(b *testing.B) {
			b.ReportAllocs()
			benchSeeds(b, size, func(seed uint64) { GenerateAnalyzed(size, seed) })
		})
	}
}

func BenchmarkAnalyze(b *testing.B) {
	for _, size := range Sizes {
		b.Run(string(size), func(b *testing.B) {
			layouts := make([]MapLayout, 64)
			for i := range layouts {
				layouts[i] = Generate(size, uint64(i))
			}
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			i := 0
			for b.Loop() {
				Analyze(layouts[i%len(layouts)])
				i++
			}
		})
	}
}

func BenchmarkEncodeJSON(b *testing.B) {
	for _, size := range Sizes {
		b.Run(string(size), func(b *testing.B) {
			l := Generate(size, 1)
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			for b.Loop() {
				if _, err := json.Marshal(l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlacementCheck measures State.Check for trap and tower
// placements on every cell of a map on which some traps already stand.
func BenchmarkPlacementCheck(b *testing.B) {
	for _, size := range Sizes {
		b.Run(string(size), func(b *testing.B) {
			l := Generate(size, 3)
			board, err := NewBoard(l)
			if err != nil {
				b.Fatal(err)
			}
			st := board.NewState()
			var probes []Placement
			for y := range l.Height {
				for x := range l.Width {
					for _, k := range []StructureKind{Trap, Tower} {
						p := Placement{k, GridPoint{x, y}}
						if (x*7+y*3)%11 == 0 {
							st.Place(p)
						}
						probes = append(probes, p)
					}
				}
			}
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			i := 0
			for b.Loop() {
				st.Check(probes[i%len(probes)])
				i++
			}
		})
	}
}

// BenchmarkPlacementCheckLaneCells measures checks on lane cells only,
// where the route-cut test runs.
func BenchmarkPlacementCheckLaneCells(b *testing.B) {
	for _, size := range Sizes {
		b.Run(string(size), func(b *testing.B) {
			l := Generate(size, 3)
			board, err := NewBoard(l)
			if err != nil {
				b.Fatal(err)
			}
			st := board.NewState()
			var probes []Placement
			for _, ln := range l.Lanes {
				for _, c := range ln.Cells {
					probes = append(probes, Placement{Trap, c})
				}
			}
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			i := 0
			for b.Loop() {
				st.Check(probes[i%len(probes)])
				i++
			}
		})
	}
}

func BenchmarkValidatePlacement(b *testing.B) {
	l := Generate(Long, 3)
	p := Placement{Trap, l.Lanes[0].Cells[len(l.Lanes[0].Cells)/2]}
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		_ = ValidatePlacement(l, nil, p)
	}
}

func BenchmarkNewBoard(b *testing.B) {
	for _, size := range Sizes {
		b.Run(string(size), func(b *testing.B) {
			l := Generate(size, 3)
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			for b.Loop() {
				if _, err := NewBoard(l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	for _, size := range Sizes {
		b.Run(string(size), func(b *testing.B) {
			data, err := json.Marshal(Generate(size, 1))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			for b.Loop() {
				var l MapLayout
				if err := json.Unmarshal(data, &l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseLayout is the strict decoder; compare with BenchmarkDecodeJSON.
func BenchmarkParseLayout(b *testing.B) {
	data, err := json.Marshal(Generate(Long, 42))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		if _, err := ParseLayout(data); err != nil {
			b.Fatal(err)
		}
	}
}
