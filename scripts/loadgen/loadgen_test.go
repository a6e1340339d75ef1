package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDecodeMessageJoinsQuotedPrintableLinks(t *testing.T) {
	token := strings.Repeat("0123456789abcdef", 4)
	raw := "From: a@example.com\r\nTo: b@example.com\r\nMessage-Id: <1@x>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=BB\r\n\r\n" +
		"--BB\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"Confirm: http://127.0.0.1:8080/confirm?token=3D" + token[:40] + "=\r\n" + token[40:] + "\r\n" +
		"--BB\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		"PGI+aGk8L2I+\r\n--BB--\r\n"
	got := decodeMessage([]byte(raw))
	if !strings.Contains(got, "token="+token) {
		t.Fatalf("decoded text lacks the whole token:\n%s", got)
	}
	if !strings.Contains(got, "<b>hi</b>") {
		t.Fatalf("decoded text lacks the base64 HTML part:\n%s", got)
	}
}

func TestParseGoBenchTakesMedians(t *testing.T) {
	out := `goos: linux
pkg: example.com/a
BenchmarkX/short-2   	  100	      30.0 ns/op	      8 B/op	       1 allocs/op
BenchmarkX/short-2   	  100	      10.0 ns/op	      8 B/op	       1 allocs/op
BenchmarkX/short-2   	  100	      20.0 ns/op	      8 B/op	       1 allocs/op
BenchmarkY-2   	  5	      2000 ns/op
BenchmarkZ/long-2   	  10	      900 ns/op	  300 cpu-ns/op	  8 B/op	  1 allocs/op
PASS
`
	got, err := parseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].CPUNsPerOp != 300 || got[2].NsPerOp != 900 || got[2].AllocsPerOp != 1 || got[0].Name != "BenchmarkX/short" || got[0].NsPerOp != 20 || got[0].Runs != 3 ||
		got[0].BytesPerOp != 8 || got[1].Name != "BenchmarkY" || got[1].NsPerOp != 2000 || got[0].Package != "example.com/a" {
		t.Fatalf("parsed %+v", got)
	}
}

func TestJudgeSoak(t *testing.T) {
	flat := []float64{40, 41, 40, 42, 41, 40, 41, 42}
	leak := []float64{40, 44, 48, 52, 56, 60, 64, 68}
	for _, tc := range []struct {
		name   string
		rss    []float64
		errors int64
		pass   bool
	}{
		{"flat", flat, 0, true},
		{"leak", leak, 0, false},
		{"errors", flat, 1, false},
		{"too short", flat[:4], 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &soakResult{Errors: tc.errors, Intervals: []soakInterval{{AtSec: 0, RSSMiB: 90, Warmup: true}}}
			for i, v := range tc.rss {
				res.Intervals = append(res.Intervals, soakInterval{AtSec: float64(10 * (i + 1)), RSSMiB: v})
			}
			judgeSoak(res)
			if res.Pass != tc.pass {
				t.Fatalf("pass = %v, want %v: %s", res.Pass, tc.pass, res.Verdict)
			}
		})
	}
}

func TestJarFollowsSetCookie(t *testing.T) {
	var j jar
	h := http.Header{}
	h.Add("Set-Cookie", "b=2; Path=/; HttpOnly")
	h.Add("Set-Cookie", "a=1; Path=/")
	j.update(h)
	if j.header != "a=1; b=2" {
		t.Fatalf("cookie header %q", j.header)
	}
	h = http.Header{}
	h.Add("Set-Cookie", "a=; Max-Age=0")
	h.Add("Set-Cookie", "b=3; Expires="+time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
	j.update(h)
	if j.header != "b=3" {
		t.Fatalf("cookie header after delete %q", j.header)
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(101-i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.P50 != 50 || l.P99 != 99 || l.Max != 100 {
		t.Fatalf("summary %+v", l)
	}
}

func TestScrapeMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 18\n"+
			"go_sql_open_connections{db_name=\"postgres\"} 4\ngo_sql_open_connections{db_name=\"other\"} 1\n"+
			"odd_metric{label=\"a b} c\"} 2.5e+06 1700000000000\n")
	}))
	defer srv.Close()
	m, err := scrapeMetrics(t.Context(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if m["go_goroutines"] != 18 || m["go_sql_open_connections"] != 5 || m["odd_metric"] != 2.5e6 {
		t.Fatalf("scraped %v", m)
	}
}
