// Command signinflood attacks a running serve the way issue reports
// describe, to measure sign-in under attack:
//
//	-mode flood: 150 clients send wrong-password sign-ins, each from a new
//	address, while one legitimate player signs in once a second; it prints
//	the player's statuses and latencies and the server's RSS.
//	-mode keys: locks an account, floods 6,500 invalid sign-ups with fresh
//	emails from 1,300 addresses, then guesses again: the lockout must hold.
//
// The server must trust 127.0.0.1 as a proxy (PLATFORM_TRUSTED_PROXIES),
// so the X-Forwarded-For addresses count as clients. See
// scripts/signin-flood.sh.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var base = flag.String("base", "", "server URL")
var pid = flag.Int("pid", 0, "server pid for RSS")
var mode = flag.String("mode", "flood", "flood|keys")

var client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 400}}

func post(path, ip string, body any) (int, time.Duration) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", *base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", *base)
	req.Header.Set("X-Forwarded-For", ip)
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, time.Since(start)
	}
	res.Body.Close()
	return res.StatusCode, time.Since(start)
}

func rss() (string, string) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", *pid))
	var cur, peak string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			cur = strings.TrimSpace(l[6:])
		}
		if strings.HasPrefix(l, "VmHWM:") {
			peak = strings.TrimSpace(l[6:])
		}
	}
	return cur, peak
}

func main() {
	flag.Parse()
	signUp := func(email, ip string) int {
		s, _ := post("/api/auth/player/sign-up/email", ip, map[string]any{"email": email, "password": "correct horse battery", "name": "P", "nickname": "p" + fmt.Sprint(time.Now().UnixNano()%1e9)})
		return s
	}
	legit := fmt.Sprintf("legit%d@example.com", time.Now().UnixNano())
	if *mode == "flood" {
		fmt.Println("sign-up legit:", signUp(legit, "192.0.2.200"))
		stop := make(chan struct{})
		var sent, c503, c429, c401 atomic.Int64
		var wg sync.WaitGroup
		for c := range 150 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					ip := fmt.Sprintf("10.%d.%d.%d", c, i/250%250, i%250+1)
					s, _ := post("/api/auth/player/sign-in/email", ip, map[string]any{"email": fmt.Sprintf("nobody%d_%d@example.com", c, i), "password": "wrong password"})
					sent.Add(1)
					switch s {
					case 503:
						c503.Add(1)
					case 429:
						c429.Add(1)
					case 401:
						c401.Add(1)
					}
				}
			})
		}
		time.Sleep(3 * time.Second)
		var lat []time.Duration
		statuses := map[int]int{}
		for range 8 {
			s, d := post("/api/auth/player/sign-in/email", "192.0.2.201", map[string]any{"email": legit, "password": "correct horse battery"})
			statuses[s]++
			lat = append(lat, d)
			time.Sleep(time.Second)
		}
		cur, peak := rss()
		close(stop)
		wg.Wait()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		fmt.Printf("legit sign-ins: statuses %v; latency min %s p50 %s max %s\n", statuses, lat[0].Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		fmt.Printf("flood: %d sent, %d answered 401, %d 429, %d 503; server RSS now %s, peak %s\n", sent.Load(), c401.Load(), c429.Load(), c503.Load(), cur, peak)
		return
	}
	// keys: lock an account, flood 1,300 addresses of fresh-email sign-ups, guess again
	fmt.Println("sign-up victim:", signUp("lockme@example.com", "192.0.2.210"))
	locked := map[int]int{}
	for i := range 12 {
		s, _ := post("/api/auth/player/sign-in/email", fmt.Sprintf("172.16.0.%d", i+1), map[string]any{"email": "lockme@example.com", "password": "wrong guess"})
		locked[s]++
	}
	fmt.Println("12 guesses before the flood:", locked)
	var wg sync.WaitGroup
	flood := map[int]int{}
	var mu sync.Mutex
	start := time.Now()
	for a := range 1300 {
		wg.Go(func() {
			for j := range 5 {
				s, _ := post("/api/auth/player/sign-up/email", fmt.Sprintf("100.%d.%d.1", a/250, a%250), map[string]any{"email": fmt.Sprintf("f%d_%d@example.com", a, j), "password": "x", "name": "", "nickname": "!"})
				mu.Lock()
				flood[s]++
				mu.Unlock()
			}
		})
		if a%100 == 99 {
			wg.Wait()
		}
	}
	wg.Wait()
	fmt.Printf("flood: 6500 invalid sign-ups with fresh emails from 1300 addresses in %s: %v\n", time.Since(start).Round(time.Millisecond), flood)
	after := map[int]int{}
	for i := range 19 {
		s, _ := post("/api/auth/player/sign-in/email", fmt.Sprintf("172.17.0.%d", i+1), map[string]any{"email": "lockme@example.com", "password": "wrong guess"})
		after[s]++
	}
	fmt.Println("19 guesses after the flood:", after)
}
