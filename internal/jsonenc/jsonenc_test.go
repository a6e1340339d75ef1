package jsonenc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
)

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var samples = []string{
	"", "plain", `quote " backslash \ slash /`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f\x7f", "naïve café 日本語 🎮", "line\u2028sep\u2029para", "bad \xff\xfe utf8 \xe2\x82", "\xed\xa0\x80 surrogate",
}

func TestStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Errorf("String(%q) = %s, want %s", s, got, want)
		}
	}
	var nilString *string
	if got, want := string(StringPtr(nil, nilString)), marshal(t, nilString); got != want {
		t.Errorf("StringPtr(nil) = %s, want %s", got, want)
	}
	s := "x<y"
	if got, want := string(StringPtr(nil, &s)), marshal(t, &s); got != want {
		t.Errorf("StringPtr(%q) = %s, want %s", s, got, want)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Errorf("String(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestUUIDMatchesEncodingJSON(t *testing.T) {
	for _, id := range []uuid.UUID{uuid.Nil, uuid.New(), uuid.Max} {
		if got, want := string(UUID(nil, id)), marshal(t, id); got != want {
			t.Errorf("UUID(%v) = %s, want %s", id, got, want)
		}
	}
}

func TestTimeMatchesEncodingJSON(t *testing.T) {
	for _, tm := range []time.Time{
		{}, time.Now(), time.Now().UTC(), time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 21, 10, 0, 0, 123000000, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", -5*3600)),
		time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("odd", 5*3600+30*60)),
	} {
		if got, want := string(Time(nil, tm)), marshal(t, tm); got != want {
			t.Errorf("Time(%v) = %s, want %s", tm, got, want)
		}
	}
}

func TestNumbersAndBools(t *testing.T) {
	for _, n := range []int{0, 1, -1, 1 << 40} {
		if got, want := string(Int(nil, n)), marshal(t, n); got != want {
			t.Errorf("Int(%d) = %s, want %s", n, got, want)
		}
	}
	for _, v := range []bool{false, true} {
		if got, want := string(Bool(nil, v)), marshal(t, v); got != want {
			t.Errorf("Bool(%v) = %s, want %s", v, got, want)
		}
	}
}
