// Package jsonenc appends JSON values byte for byte as encoding/json
// writes them, for the few responses hot enough that encoding/json's
// reflection (and its MarshalJSON and MarshalText calls for every time and
// UUID) is a large part of the request's CPU. The tests hold each function
// to encoding/json's output.
package jsonenc

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

const hex = "0123456789abcdef"

// String appends s as a JSON string the way encoding/json does: <, > and &
// escaped for HTML, U+2028 and U+2029 escaped, invalid UTF-8 replaced by
// U+FFFD.
func String(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// StringPtr appends *s, or null for nil.
func StringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return String(b, *s)
}

// UUID appends id in its canonical text form, as uuid.UUID's MarshalText.
func UUID(b []byte, id uuid.UUID) []byte {
	b = append(b, '"')
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&0xF])
	}
	return append(b, '"')
}

// Time appends t as time.Time's MarshalJSON does (RFC 3339 with the
// nanoseconds it has), for years 0 to 9999, where MarshalJSON succeeds.
func Time(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// Int appends n.
func Int(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// Bool appends v.
func Bool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }
