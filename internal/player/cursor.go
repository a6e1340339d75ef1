package player

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/platform"
)

// cursor is a position in a list ordered newest first: the list it
// belongs to (kind), and the time and id of the last entry shown. Keyset
// positions keep a page stable while entries are added: new ones sort
// before the cursor and are never shown twice nor make others skip.
type cursor struct {
	kind string
	at   time.Time
	id   uuid.UUID
}

// cursorVersion prefixes every cursor, so the format can change.
const cursorVersion = "c1"

// maxCursorLen bounds what decodeCursor reads.
const maxCursorLen = 128

var errBadCursor = platform.Errorf(platform.KindInvalid, CodeInvalidCursor,
	"The cursor is not one this server gave out; start again without it")

// encodeCursor returns the opaque form of c.
func encodeCursor(c cursor) string {
	raw := fmt.Sprintf("%s|%s|%d|%s", cursorVersion, c.kind, c.at.UnixMicro(), c.id)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeCursor parses a cursor from a client; anything that encodeCursor
// could not have produced is INVALID_CURSOR.
func decodeCursor(s string) (cursor, error) {
	if len(s) > maxCursorLen {
		return cursor{}, errBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errBadCursor
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 4 || parts[0] != cursorVersion || parts[1] == "" {
		return cursor{}, errBadCursor
	}
	micros, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || micros < 0 || micros > 1<<53 {
		return cursor{}, errBadCursor
	}
	id, err := uuid.Parse(parts[3])
	if err != nil || id.String() != parts[3] {
		return cursor{}, errBadCursor
	}
	return cursor{kind: parts[1], at: time.UnixMicro(micros).UTC(), id: id}, nil
}

// pageLimit checks a requested page size.
func pageLimit(limit *int, def, max int) (int, error) {
	if limit == nil {
		return def, nil
	}
	if *limit < 1 || *limit > max {
		return 0, platform.Invalid("limit", fmt.Sprintf("must be 1-%d", max))
	}
	return *limit, nil
}
