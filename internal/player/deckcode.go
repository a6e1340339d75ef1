package player

import (
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
)

// Deck code format "TD", version 1.
//
//	code    = "TD" version payload
//	version = one Crockford base32 character (1 today)
//	payload = Crockford base32, no padding, of: body CRC32
//	body    = group(count 1) group(count 2) groupN
//	group   = varint(n) n*varint(delta)                    ; numIds ascending
//	groupN  = varint(n) n*(varint(delta) varint(count))    ; count >= 3
//	CRC32   = IEEE CRC-32, big-endian, over the version byte and body
//
// Varints are unsigned LEB128. Within a group the first delta is the numId
// itself and every later one the difference to the previous numId, so a
// group is strictly ascending. Only the canonical encoding of a deck is
// accepted, which makes the code a deck's identity: one deck, one code.
//
// The alphabet (0-9 A-Z without I L O U) survives chat, URLs and reading
// aloud; decoding ignores case, spaces and hyphens and reads O as 0 and
// I or L as 1.
const (
	// DeckCodePrefix starts every deck code.
	DeckCodePrefix = "TD"
	// DeckCodeVersion is the version this server writes.
	DeckCodeVersion = 1
	// MaxDeckCodeLen bounds the accepted input, before normalisation. The
	// longest code the limits below allow is 815 characters; real decks
	// need about 40.
	MaxDeckCodeLen = 1024
	// maxDeckCodeCards bounds distinct cards in a code; far above any deck rule.
	maxDeckCodeCards = 100
	// maxCodeCount bounds the copies of one card in a code.
	maxCodeCount = 99
	// maxNumID bounds card numeric ids (2^24-1) so varints stay short.
	maxNumID = 1<<24 - 1
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var deckCodeEncoding = base32.NewEncoding(crockford).WithPadding(base32.NoPadding)

// Reasons a deck code cannot be read; they appear as details.reason of a
// DECK_CODE_INVALID error.
const (
	DeckCodeMalformed          = "MALFORMED"
	DeckCodeBadChecksum        = "BAD_CHECKSUM"
	DeckCodeUnsupportedVersion = "UNSUPPORTED_VERSION"
)

// DeckCodeError says why a deck code could not be decoded.
type DeckCodeError struct {
	Reason  string // one of the DeckCode* reasons
	Message string
}

// Error implements error.
func (e *DeckCodeError) Error() string { return "deck code: " + e.Message }

func codeErr(reason, format string, args ...any) error {
	return &DeckCodeError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// CardCount is one entry of a deck: a card, by its permanent numeric id,
// and how many copies the deck holds.
type CardCount struct {
	NumID uint32 `json:"numId"`
	Count int    `json:"count"`
}

// EncodeDeck returns the canonical code of a deck. The order of cards does
// not matter; a card listed twice, a count outside 1-99 or a numId outside
// 1-16777215 is an error.
func EncodeDeck(cards []CardCount) (string, error) {
	sorted, err := canonicalCards(cards)
	if err != nil {
		return "", err
	}
	return encodeSorted(sorted), nil
}

// canonicalCards returns cards sorted by numId (a copy when they were not;
// callers never modify the result) after checking the limits that every
// code must respect.
func canonicalCards(cards []CardCount) ([]CardCount, error) {
	if len(cards) == 0 {
		return nil, errors.New("a deck needs at least one card")
	}
	if len(cards) > maxDeckCodeCards {
		return nil, fmt.Errorf("a deck code holds at most %d distinct cards", maxDeckCodeCards)
	}
	sorted := cards
	if !slices.IsSortedFunc(cards, byNumID) {
		sorted = slices.Clone(cards)
		slices.SortFunc(sorted, byNumID)
	}
	for i, c := range sorted {
		if c.NumID == 0 || c.NumID > maxNumID {
			return nil, fmt.Errorf("card numId %d is outside 1-%d", c.NumID, maxNumID)
		}
		if c.Count < 1 || c.Count > maxCodeCount {
			return nil, fmt.Errorf("card %d: count %d is outside 1-%d", c.NumID, c.Count, maxCodeCount)
		}
		if i > 0 && sorted[i-1].NumID == c.NumID {
			return nil, fmt.Errorf("card %d is listed twice", c.NumID)
		}
	}
	return sorted, nil
}

func byNumID(a, b CardCount) int { return int(a.NumID) - int(b.NumID) }

// encodeSorted writes the code of a sorted, checked deck.
func encodeSorted(cards []CardCount) string {
	var raw [maxBodyLen + 4]byte
	n := putBody((*[maxBodyLen]byte)(raw[:maxBodyLen]), cards)
	binary.BigEndian.PutUint32(raw[n:], checksum(raw[:n]))
	var text [maxCodeLen]byte
	copy(text[:], DeckCodePrefix)
	text[len(DeckCodePrefix)] = crockford[DeckCodeVersion]
	m := len(DeckCodePrefix) + 1 + deckCodeEncoding.EncodedLen(n-1+4)
	deckCodeEncoding.Encode(text[len(DeckCodePrefix)+1:m], raw[1:n+4])
	return string(text[:m])
}

// maxCodeLen bounds the canonical code of the largest body.
const maxCodeLen = len(DeckCodePrefix) + 1 + ((maxBodyLen+4-1)*8+4)/5

// crcTable drives checksum. The IEEE CRC-32 is computed here rather than
// with crc32.ChecksumIEEE because that call makes its argument escape to
// the heap (it dispatches through a function variable), and keeping the
// code's buffers on the stack halves the cost of an encode and a decode.
// A test checks checksum against hash/crc32.
var crcTable = crc32.MakeTable(crc32.IEEE)

// checksum is the IEEE CRC-32 of b.
func checksum(b []byte) uint32 {
	crc := ^uint32(0)
	for _, v := range b {
		crc = crcTable[byte(crc)^v] ^ (crc >> 8)
	}
	return ^crc
}

// maxBodyLen bounds a body: version, three group sizes, and per card a
// delta of at most 4 bytes and a count byte.
const maxBodyLen = 1 + 3 + maxDeckCodeCards*5

// putBody writes the version byte and the three groups of a sorted deck
// into b and returns the length.
func putBody(b *[maxBodyLen]byte, cards []CardCount) int {
	b[0] = DeckCodeVersion
	n := 1
	for group := 1; group <= 3; group++ {
		size, prev := 0, uint32(0)
		for _, c := range cards {
			if countGroup(c.Count) == group {
				size++
			}
		}
		n += binary.PutUvarint(b[n:], uint64(size))
		for _, c := range cards {
			if countGroup(c.Count) != group {
				continue
			}
			n += binary.PutUvarint(b[n:], uint64(c.NumID-prev))
			prev = c.NumID
			if group == 3 {
				n += binary.PutUvarint(b[n:], uint64(c.Count))
			}
		}
	}
	return n
}

// countGroup maps a count to its group: 1, 2, or 3 for "three or more".
func countGroup(count int) int { return min(count, 3) }

// DecodeDeck parses a deck code and returns its cards sorted by numId. It
// accepts only the canonical encoding; any other input yields a
// *DeckCodeError whose Reason says what is wrong.
func DecodeDeck(code string) ([]CardCount, error) {
	if len(code) > MaxDeckCodeLen {
		return nil, codeErr(DeckCodeMalformed, "longer than %d characters", MaxDeckCodeLen)
	}
	norm, ok := normalizeDeckCode(code)
	if !ok {
		return nil, codeErr(DeckCodeMalformed, "contains characters that are not part of a deck code")
	}
	if !strings.HasPrefix(norm, DeckCodePrefix) || len(norm) < len(DeckCodePrefix)+2 {
		return nil, codeErr(DeckCodeMalformed, "does not start with %q", DeckCodePrefix)
	}
	version := strings.IndexByte(crockford, norm[len(DeckCodePrefix)])
	if version == 0 {
		return nil, codeErr(DeckCodeMalformed, "version 0 does not exist")
	}
	if version != DeckCodeVersion {
		return nil, codeErr(DeckCodeUnsupportedVersion, "version %d is not supported; this server reads version %d", version, DeckCodeVersion)
	}
	text := norm[len(DeckCodePrefix)+1:]
	var textBuf [MaxDeckCodeLen]byte
	var rawBuf [1 + (MaxDeckCodeLen*5+7)/8]byte
	raw := rawBuf[:1+deckCodeEncoding.DecodedLen(len(text))]
	raw[0] = byte(version)
	n, err := deckCodeEncoding.Decode(raw[1:], textBuf[:copy(textBuf[:], text)])
	// Go's decoder drops a dangling final character and non-zero padding
	// bits silently; both would give one deck several spellings.
	if err != nil || deckCodeEncoding.EncodedLen(n) != len(text) || !zeroPaddingBits(text, n) {
		return nil, codeErr(DeckCodeMalformed, "is not valid base32")
	}
	raw = raw[:1+n]
	if len(raw) < 1+3+4 {
		return nil, codeErr(DeckCodeMalformed, "is too short")
	}
	body, sum := raw[:len(raw)-4], binary.BigEndian.Uint32(raw[len(raw)-4:])
	if checksum(body) != sum {
		return nil, codeErr(DeckCodeBadChecksum, "checksum does not match; the code was mistyped or cut off")
	}
	cards, err := parseDeckBody(body[1:])
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cards, byNumID)
	for i := 1; i < len(cards); i++ {
		if cards[i-1].NumID == cards[i].NumID {
			return nil, codeErr(DeckCodeMalformed, "lists card %d twice", cards[i].NumID)
		}
	}
	if len(cards) == 0 {
		return nil, codeErr(DeckCodeMalformed, "holds no cards")
	}
	// Re-encoding catches the remaining non-canonical forms, such as
	// varints written with more bytes than needed.
	var again [maxBodyLen]byte
	if m := putBody(&again, cards); string(again[:m]) != string(body) {
		return nil, codeErr(DeckCodeMalformed, "is not in canonical form")
	}
	return cards, nil
}

// zeroPaddingBits reports whether the bits of text's last character beyond
// the n decoded bytes are zero.
func zeroPaddingBits(text string, n int) bool {
	unused := len(text)*5 - n*8
	if unused == 0 {
		return true
	}
	v := strings.IndexByte(crockford, text[len(text)-1])
	return v&(1<<unused-1) == 0
}

// parseDeckBody reads the three groups of a version 1 body.
func parseDeckBody(b []byte) ([]CardCount, error) {
	cards := make([]CardCount, 0, 16)
	for group := 1; group <= 3; group++ {
		n, err := readUvarint(&b)
		if err != nil {
			return nil, err
		}
		if n > maxDeckCodeCards || len(cards)+int(n) > maxDeckCodeCards {
			return nil, codeErr(DeckCodeMalformed, "holds more than %d distinct cards", maxDeckCodeCards)
		}
		var prev uint64
		for range n {
			delta, err := readUvarint(&b)
			if err != nil {
				return nil, err
			}
			if delta == 0 || delta > maxNumID || prev+delta > maxNumID {
				return nil, codeErr(DeckCodeMalformed, "card ids are not strictly ascending")
			}
			prev += delta
			count := group
			if group == 3 {
				c, err := readUvarint(&b)
				if err != nil {
					return nil, err
				}
				if c < 3 || c > maxCodeCount {
					return nil, codeErr(DeckCodeMalformed, "copy count %d is out of range", c)
				}
				count = int(c)
			}
			cards = append(cards, CardCount{NumID: uint32(prev), Count: count})
		}
	}
	if len(b) != 0 {
		return nil, codeErr(DeckCodeMalformed, "has trailing data")
	}
	return cards, nil
}

func readUvarint(b *[]byte) (uint64, error) {
	v, n := binary.Uvarint(*b)
	if n <= 0 {
		return 0, codeErr(DeckCodeMalformed, "is cut off")
	}
	*b = (*b)[n:]
	return v, nil
}

// normalizeDeckCode upper-cases s, drops spaces and hyphens and maps the
// look-alikes O, I and L to 0, 1 and 1. It reports false when a character
// outside the alphabet remains.
func normalizeDeckCode(s string) (string, bool) {
	if isNormalDeckCode(s) {
		return s, true
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '-' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		switch c {
		case 'O':
			c = '0'
		case 'I', 'L':
			c = '1'
		}
		if strings.IndexByte(crockford, c) < 0 {
			return "", false
		}
		out = append(out, c)
	}
	return string(out), true
}

// isNormalDeckCode reports whether s needs no normalisation, which is the
// case for every code this server hands out.
func isNormalDeckCode(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') || c == 'I' || c == 'L' || c == 'O' || c == 'U' {
			return false
		}
	}
	return true
}
