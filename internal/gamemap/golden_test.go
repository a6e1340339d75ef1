package gamemap

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenSeeds are pinned per size: JSON and ASCII of each. TestPictureGolden
// pins pictures.
var goldenSeeds = []uint64{42, 0, 18446744073709551615}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; if the change is intended, bump Version and run go test -update\ngot:\n%s", name, got)
	}
}

// TestGolden pins generated layouts byte for byte: a change here changes
// every client's maps, so it must come with a Version bump.
func TestGolden(t *testing.T) {
	for _, size := range Sizes {
		for _, seed := range goldenSeeds {
			l, a := GenerateAnalyzed(size, seed)
			name := fmt.Sprintf("%s-%d", size, seed)
			data, err := json.MarshalIndent(struct {
				Layout   MapLayout         `json:"layout"`
				Analysis MapLayoutAnalysis `json:"analysis"`
			}{l, a}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".json", append(data, '\n'))
			text, err := ASCII(l)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", []byte(text))
		}
	}
}

// TestGoldenDigest pins the compact JSON of seeds 0..999 of each size with
// one SHA-256 per size, catching any drift the few full goldens miss.
func TestGoldenDigest(t *testing.T) {
	lines := make([]string, len(Sizes))
	var wg sync.WaitGroup
	for i, size := range Sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			for seed := range uint64(1000) {
				data, err := json.Marshal(Generate(size, seed))
				if err != nil {
					t.Error(err)
					return
				}
				h.Write(data)
				h.Write([]byte{'\n'})
			}
			lines[i] = fmt.Sprintf("%s version %d seeds 0-999 sha256 %x\n", size, Version, h.Sum(nil))
		}()
	}
	wg.Wait()
	golden(t, "digest.txt", []byte(strings.Join(lines, "")))
}
