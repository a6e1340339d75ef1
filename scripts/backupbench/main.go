// Command backupbench measures what `platformctl backup` costs a serving
// embedded database: each run loads serve with -c clients reading a page
// that reads the database, first for -before, then while a backup runs,
// and reports the backup's duration and the p99 latency of both phases.
// scripts/backup-bench.sh builds the database and starts serve.
//
//	backupbench -base http://127.0.0.1:8080 -cookie-file cookie.txt -platformctl ./platformctl -to DIR [-runs 3]
//
// The backup runs with this process's environment (PLATFORM_DATABASE_URL).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

type result struct {
	Run           int     `json:"run"`
	BackupSeconds float64 `json:"backupSeconds"`
	BackupBytes   int64   `json:"backupBytes"`
	P99BeforeMs   float64 `json:"p99BeforeMs"`
	P99DuringMs   float64 `json:"p99DuringMs"`
	Ratio         float64 `json:"p99Ratio"`
	Requests      int     `json:"requestsDuring"`
	Errors        int     `json:"errors"`
}

func main() {
	base := flag.String("base", "", "serve's base URL")
	cookieFile := flag.String("cookie-file", "", "file with a signed-in player's Cookie header")
	bin := flag.String("platformctl", "platformctl", "the platformctl binary")
	to := flag.String("to", "", "directory for the backups")
	path := flag.String("path", "/api/player/bootstrap", "the page the clients read")
	clients := flag.Int("c", 8, "concurrent clients")
	before := flag.Duration("before", 10*time.Second, "how long to measure before each backup")
	runs := flag.Int("runs", 3, "backups to take")
	flag.Parse()
	raw, err := os.ReadFile(*cookieFile)
	if *base == "" || *to == "" || err != nil || *runs < 1 || *clients < 1 {
		fmt.Fprintln(os.Stderr, "usage: backupbench -base URL -cookie-file FILE -platformctl BIN -to DIR [-runs N] [-c N] [-before D]", err)
		os.Exit(2)
	}
	p := prober{url: *base + *path, cookie: strings.TrimSpace(string(raw)), clients: *clients}
	var results []result
	for run := 1; run <= *runs; run++ {
		r, err := measure(p, *bin, filepath.Join(*to, fmt.Sprintf("backup-%d.db", run)), *before)
		if err != nil {
			fmt.Fprintln(os.Stderr, "backupbench:", err)
			os.Exit(1)
		}
		r.Run = run
		line, _ := json.Marshal(r)
		fmt.Println(string(line))
		results = append(results, r)
	}
	med := func(f func(result) float64) float64 {
		v := make([]float64, len(results))
		for i, r := range results {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	fmt.Printf("median of %d: backup %.1fs, p99 %.1fms before, %.1fms during (%.2fx)\n", len(results),
		med(func(r result) float64 { return r.BackupSeconds }), med(func(r result) float64 { return r.P99BeforeMs }),
		med(func(r result) float64 { return r.P99DuringMs }), med(func(r result) float64 { return r.Ratio }))
}

// measure loads serve for before, then during one backup to file.
func measure(p prober, bin, file string, before time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), before)
	quiet, errs := p.run(ctx)
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	type done struct {
		took time.Duration
		err  error
	}
	finished := make(chan done, 1)
	go func() {
		start := time.Now()
		out, err := exec.Command(bin, "backup", "--to", file).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("platformctl backup: %v: %s", err, out)
		}
		finished <- done{time.Since(start), err}
		cancel()
	}()
	busy, busyErrs := p.run(ctx)
	d := <-finished
	if d.err != nil {
		return result{}, d.err
	}
	fi, err := os.Stat(file)
	if err != nil {
		return result{}, err
	}
	r := result{BackupSeconds: d.took.Seconds(), BackupBytes: fi.Size(), P99BeforeMs: p99(quiet), P99DuringMs: p99(busy),
		Requests: len(busy), Errors: errs + busyErrs}
	r.Ratio = r.P99DuringMs / r.P99BeforeMs
	return r, nil
}

type prober struct {
	url, cookie string
	clients     int
}

// run reads the page from every client until ctx ends and returns the
// latencies of the answers and the number of failures.
func (p prober) run(ctx context.Context) ([]time.Duration, int) {
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	var wg sync.WaitGroup
	for range p.clients {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second}
			for ctx.Err() == nil {
				req, _ := http.NewRequest("GET", p.url, nil)
				req.Header.Set("Cookie", p.cookie)
				start := time.Now()
				res, err := client.Do(req)
				took := time.Since(start)
				ok := err == nil && res.StatusCode == http.StatusOK
				if err == nil {
					res.Body.Close()
				}
				mu.Lock()
				if ok {
					lat = append(lat, took)
				} else {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return lat, failed
}

func p99(lat []time.Duration) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return float64(lat[len(lat)*99/100]) / float64(time.Millisecond)
}
