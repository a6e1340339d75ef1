package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssSampler reads the server's resident set size from
// /proc/PID/status every 100 ms, keeping the peak since the last "before"
// mark. With no PID it does nothing.
type rssSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	peak   float64
	marks  map[string]float64
	series []rssPoint
	start  time.Time
}

// rssReport is in MiB: before the scenario's warm-up, the peak during its
// measured phase, and a second after it.
type rssReport struct {
	Before float64 `json:"before"`
	Peak   float64 `json:"peak"`
	After  float64 `json:"after"`
}

type rssPoint struct {
	AtSec float64 `json:"atSeconds"`
	MiB   float64 `json:"mib"`
}

func newRSSSampler(pid int) *rssSampler {
	s := &rssSampler{pid: pid, marks: map[string]float64{}, start: time.Now()}
	if pid <= 0 {
		return s
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				if v, err := readRSS(s.pid); err == nil {
					s.mu.Lock()
					s.peak = max(s.peak, v)
					s.mu.Unlock()
				}
			}
		}
	}()
	return s
}

// mark records the current RSS under name.
func (s *rssSampler) mark(name string) {
	if s.pid <= 0 {
		return
	}
	v, err := readRSS(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks[name] = v
	s.peak = max(s.peak, v)
}

// resetPeak starts a new peak from the current RSS: the peak of a
// scenario is taken over its measured phase, so that memory a previous
// scenario left for the garbage collector to return is not charged to it.
func (s *rssSampler) resetPeak() {
	if s.pid <= 0 {
		return
	}
	v, err := readRSS(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.peak = v
	s.mu.Unlock()
}

// point appends the current RSS to the soak series.
func (s *rssSampler) point() (float64, bool) {
	if s.pid <= 0 {
		return 0, false
	}
	v, err := readRSS(s.pid)
	if err != nil {
		return 0, false
	}
	s.mu.Lock()
	s.series = append(s.series, rssPoint{AtSec: time.Since(s.start).Seconds(), MiB: v})
	s.mu.Unlock()
	return v, true
}

func (s *rssSampler) report() *rssReport {
	if s.pid <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &rssReport{Before: s.marks["before"], Peak: s.peak, After: s.marks["after"]}
}

func (s *rssSampler) close() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
}

// readRSS returns VmRSS of pid in MiB.
func readRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmRSS:") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			break
		}
		kb, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return 0, err
		}
		return kb / 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
