package player

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// deckCodeVectors are the published test vectors (README, "Deck codes").
// A change here is a format break: old codes would stop working.
var deckCodeVectors = []struct {
	code  string
	cards []CardCount
}{
	{"TD1040G00227K9ZY", []CardCount{{1, 1}}},
	{"TD1003G2081C80P6080CWPXR6G", []CardCount{{1, 2}, {2, 2}, {3, 2}, {101, 2}, {102, 2}, {201, 2}, {202, 2}}},
	{"TD1042G20G2041PE0YBWEANC", []CardCount{{1, 3}, {2, 2}, {5, 1}, {104, 3}}},
	{"TD10C209GR10C1PA082SG0G6103MSXMQVG", []CardCount{{3, 2}, {4, 1}, {8, 1}, {104, 2}, {105, 2}, {203, 1}, {204, 3}, {208, 3}}},
}

func TestDeckCodeVectors(t *testing.T) {
	for _, v := range deckCodeVectors {
		got, err := EncodeDeck(v.cards)
		if err != nil {
			t.Fatalf("encode %v: %v", v.cards, err)
		}
		if got != v.code {
			t.Errorf("encode %v = %s, want %s", v.cards, got, v.code)
		}
		cards, err := DecodeDeck(v.code)
		if err != nil {
			t.Fatalf("decode %s: %v", v.code, err)
		}
		if diff := cmp.Diff(v.cards, cards); diff != "" {
			t.Errorf("decode %s (-want +got):\n%s", v.code, diff)
		}
	}
}

func TestDeckCodeCanonical(t *testing.T) {
	cards := []CardCount{{7, 1}, {3, 2}, {250, 4}, {1, 3}, {9000, 1}}
	want, err := EncodeDeck(cards)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := slices.Clone(cards)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got, _ := EncodeDeck(shuffled); got != want {
			t.Fatalf("order %v encodes to %s, want %s", shuffled, got, want)
		}
	}
	// Lenient spellings decode to the same deck; the canonical code is the
	// encoder's output, not the input.
	spaced := strings.ToLower(want[:6]) + " - " + want[6:12] + "\n" + want[12:]
	got, err := DecodeDeck(spaced)
	if err != nil {
		t.Fatalf("decode %q: %v", spaced, err)
	}
	if again, _ := EncodeDeck(got); again != want {
		t.Fatalf("lenient decode re-encodes to %s, want %s", again, want)
	}
}

func TestDeckCodeRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		deck := randomDeck(rng)
		code, err := EncodeDeck(deck)
		if err != nil {
			t.Fatalf("encode %v: %v", deck, err)
		}
		if len(code) > MaxDeckCodeLen {
			t.Fatalf("code of %d cards is %d characters, above the limit", len(deck), len(code))
		}
		got, err := DecodeDeck(code)
		if err != nil {
			t.Fatalf("case %d: decode %s: %v", i, code, err)
		}
		slices.SortFunc(deck, func(a, b CardCount) int { return int(a.NumID) - int(b.NumID) })
		if diff := cmp.Diff(deck, got); diff != "" {
			t.Fatalf("round trip of %s (-want +got):\n%s", code, diff)
		}
	}
}

func randomDeck(rng *rand.Rand) []CardCount {
	n := 1 + rng.IntN(maxDeckCodeCards)
	seen := map[uint32]bool{}
	deck := make([]CardCount, 0, n)
	for len(deck) < n {
		id := uint32(1 + rng.IntN(300))
		if rng.IntN(10) == 0 {
			id = uint32(1 + rng.IntN(maxNumID))
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		deck = append(deck, CardCount{NumID: id, Count: 1 + rng.IntN(maxCodeCount)})
	}
	return deck
}

func TestDeckCodeLongestFits(t *testing.T) {
	deck := make([]CardCount, maxDeckCodeCards)
	for i := range deck {
		deck[i] = CardCount{NumID: uint32(maxNumID - i*(maxNumID/maxDeckCodeCards)), Count: maxCodeCount}
	}
	code, err := EncodeDeck(deck)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeDeck(code); err != nil {
		t.Fatalf("the longest deck (%d characters) does not decode: %v", len(code), err)
	}
}

func TestEncodeDeckRejects(t *testing.T) {
	tooMany := make([]CardCount, maxDeckCodeCards+1)
	for i := range tooMany {
		tooMany[i] = CardCount{NumID: uint32(i + 1), Count: 1}
	}
	for name, deck := range map[string][]CardCount{
		"empty":      nil,
		"zero count": {{1, 0}},
		"big count":  {{1, maxCodeCount + 1}},
		"zero id":    {{0, 1}},
		"big id":     {{maxNumID + 1, 1}},
		"duplicate":  {{4, 1}, {4, 2}},
		"too many":   tooMany,
	} {
		if code, err := EncodeDeck(deck); err == nil {
			t.Errorf("%s: encoded %v as %s, want an error", name, deck, code)
		}
	}
}

// rawCode builds a code from a body with a correct checksum, to reach the
// checks behind the checksum.
func rawCode(version byte, body []byte) string {
	b := append([]byte{version}, body...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return DeckCodePrefix + string(crockford[version]) + deckCodeEncoding.EncodeToString(b[1:])
}

// truncatedBytes drops the last n bytes of a code's payload and spells the
// rest correctly, as a copy-and-paste that lost the end would.
func truncatedBytes(code string, n int) string {
	raw, err := deckCodeEncoding.DecodeString(code[3:])
	if err != nil {
		panic(err)
	}
	return code[:3] + deckCodeEncoding.EncodeToString(raw[:len(raw)-n])
}

func TestDecodeDeckReasons(t *testing.T) {
	valid := deckCodeVectors[2].code
	flipped := []byte(valid)
	flipped[10] = crockford[(strings.IndexByte(crockford, flipped[10])+1)%32]
	swapped := []byte(valid)
	swapped[8], swapped[9] = swapped[9], swapped[8]
	tests := []struct {
		name, code, reason string
	}{
		{"empty", "", DeckCodeMalformed},
		{"wrong prefix", "XX" + valid[2:], DeckCodeMalformed},
		{"prefix only", "TD", DeckCodeMalformed},
		{"bad character", valid[:8] + "!" + valid[9:], DeckCodeMalformed},
		{"letter U", valid[:8] + "U" + valid[9:], DeckCodeMalformed},
		{"non-ascii", valid + "é", DeckCodeMalformed},
		{"too long", "TD1" + strings.Repeat("0", MaxDeckCodeLen), DeckCodeMalformed},
		{"version 0", "TD0" + valid[3:], DeckCodeMalformed},
		{"version 2", "TD2" + valid[3:], DeckCodeUnsupportedVersion},
		{"version 31", "TDZ" + valid[3:], DeckCodeUnsupportedVersion},
		{"truncated mid-character", valid[:len(valid)-3], DeckCodeMalformed},
		{"truncated by whole bytes", truncatedBytes(valid, 2), DeckCodeBadChecksum},
		{"typo", string(flipped), DeckCodeBadChecksum},
		{"transposition", string(swapped), DeckCodeBadChecksum},
		{"too short", rawCode(1, []byte{0}), DeckCodeMalformed},
		{"no cards", rawCode(1, []byte{0, 0, 0}), DeckCodeMalformed},
		{"trailing data", rawCode(1, []byte{1, 5, 0, 0, 9}), DeckCodeMalformed},
		{"cut off", rawCode(1, []byte{2, 5}), DeckCodeMalformed},
		{"zero delta", rawCode(1, []byte{2, 5, 0, 0, 0}), DeckCodeMalformed},
		{"count below 3 in group N", rawCode(1, []byte{0, 0, 1, 5, 2}), DeckCodeMalformed},
		{"count above 99", rawCode(1, []byte{0, 0, 1, 5, 100}), DeckCodeMalformed},
		{"card in two groups", rawCode(1, []byte{1, 5, 1, 5, 0}), DeckCodeMalformed},
		{"non-minimal varint", rawCode(1, []byte{1, 0x85, 0x00, 0, 0}), DeckCodeMalformed},
		{"huge group", rawCode(1, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}), DeckCodeMalformed},
		{"huge delta", rawCode(1, []byte{2, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0}), DeckCodeMalformed},
		{"non-zero padding bits", valid[:len(valid)-1] + string(crockford[strings.IndexByte(crockford, valid[len(valid)-1])|1]), DeckCodeMalformed},
		{"dangling character", valid + "0", DeckCodeMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cards, err := DecodeDeck(tt.code)
			var de *DeckCodeError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeDeck(%q) = %v, %v; want a *DeckCodeError", tt.code, cards, err)
			}
			if tt.reason != "" && de.Reason != tt.reason {
				t.Fatalf("DecodeDeck(%q) reason %s (%s), want %s", tt.code, de.Reason, de.Message, tt.reason)
			}
		})
	}
}

func TestChecksumIsCRC32IEEE(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 300 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if got, want := checksum(b), crc32.ChecksumIEEE(b); got != want {
			t.Fatalf("checksum of %d bytes = %08x, want %08x", n, got, want)
		}
	}
}

func FuzzDecodeDeck(f *testing.F) {
	for _, v := range deckCodeVectors {
		f.Add(v.code)
	}
	f.Add("TD1")
	f.Add("td1-0000")
	f.Add(rawCode(1, []byte{1, 0x85, 0x00, 0, 0}))
	f.Fuzz(func(t *testing.T, code string) {
		cards, err := DecodeDeck(code)
		if err != nil {
			var de *DeckCodeError
			if !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("DecodeDeck(%q) error %v is not a *DeckCodeError with a reason", code, err)
			}
			return
		}
		// Anything accepted is canonical: it re-encodes to its own
		// normalised spelling and decodes to the same cards again.
		again, err := EncodeDeck(cards)
		if err != nil {
			t.Fatalf("accepted %q but cannot re-encode %v: %v", code, cards, err)
		}
		if norm, _ := normalizeDeckCode(code); again != norm {
			t.Fatalf("accepted %q (normalised %q) but the canonical code is %q", code, norm, again)
		}
		if back, err := DecodeDeck(again); err != nil || !slices.Equal(back, cards) {
			t.Fatalf("re-decoding %q gave %v, %v; want %v", again, back, err, cards)
		}
	})
}

// BenchmarkDeckCodeRoundTrip measures encode+decode of a typical 16-card
// deck; the budget is 5µs per deck.
func BenchmarkDeckCodeRoundTrip(b *testing.B) {
	deck := []CardCount{{1, 2}, {2, 2}, {3, 1}, {5, 2}, {8, 1}, {101, 2}, {103, 1}, {201, 2}, {204, 1}, {207, 2}}
	b.ReportAllocs()
	for b.Loop() {
		code, err := EncodeDeck(deck)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeDeck(code); err != nil {
			b.Fatal(err)
		}
	}
}
