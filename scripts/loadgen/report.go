package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one loadgen invocation measured; it is written as
// JSON with -json and as tables on stdout.
type report struct {
	Machine    machine           `json:"machine"`
	Started    string            `json:"started"`
	Base       string            `json:"base"`
	Scenarios  []*scenarioResult `json:"scenarios,omitempty"`
	Soak       *soakResult       `json:"soak,omitempty"`
	Benchmarks []benchResult     `json:"benchmarks,omitempty"`
	Checks     []check           `json:"checks,omitempty"`
	Mail       *mailReport       `json:"mail,omitempty"`
}

type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	// LoadAvg is /proc/loadavg when the run started: other work on a
	// shared machine shows up here.
	LoadAvg string `json:"loadAvg"`
	Label   string `json:"label,omitempty"`
}

type mailReport struct {
	Received   int64 `json:"received"`
	Duplicates int   `json:"duplicateMessageIds"`
}

// check is one target of an issue compared with the measured figure.
type check struct {
	Issue    int    `json:"issue"`
	What     string `json:"what"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

func describeMachine(label string) machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Label: label}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return m
}

// benchResult is the median of a Go benchmark's runs. CPUNsPerOp is the
// benchmark's own thread CPU time per op, when it reports one
// (cpu-ns/op): unlike wall time it hardly changes when other processes
// share the cores.
type benchResult struct {
	Package     string  `json:"package"`
	Name        string  `json:"name"`
	Runs        int     `json:"runs"`
	NsPerOp     float64 `json:"nsPerOp"`
	CPUNsPerOp  float64 `json:"cpuNsPerOp,omitempty"`
	BytesPerOp  float64 `json:"bytesPerOp"`
	AllocsPerOp float64 `json:"allocsPerOp"`
}

var benchSuffix = regexp.MustCompile(`-\d+$`)

// parseGoBench reads `go test -bench -benchmem` output and returns the
// median of each benchmark's runs, in order of first appearance.
func parseGoBench(r io.Reader) ([]benchResult, error) {
	type acc struct {
		pkg                    string
		ns, cpu, bytes, allocs []float64
	}
	var order []string
	all := map[string]*acc{}
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		metrics := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[f[i+1]] = v
			}
		}
		ns, ok := metrics["ns/op"]
		if !ok {
			continue
		}
		key := pkg + " " + benchSuffix.ReplaceAllString(f[0], "")
		a := all[key]
		if a == nil {
			a = &acc{pkg: pkg}
			all[key] = a
			order = append(order, key)
		}
		a.ns = append(a.ns, ns)
		if v, ok := metrics["cpu-ns/op"]; ok {
			a.cpu = append(a.cpu, v)
		}
		a.bytes = append(a.bytes, metrics["B/op"])
		a.allocs = append(a.allocs, metrics["allocs/op"])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]benchResult, 0, len(order))
	for _, key := range order {
		a := all[key]
		_, name, _ := strings.Cut(key, " ")
		out = append(out, benchResult{Package: a.pkg, Name: name, Runs: len(a.ns), NsPerOp: median(a.ns),
			CPUNsPerOp: median(a.cpu), BytesPerOp: median(a.bytes), AllocsPerOp: median(a.allocs)})
	}
	return out, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// checkTargets compares every figure that has a target.
func checkTargets(plan *Plan, rep *report) []check {
	var out []check
	for _, res := range rep.Scenarios {
		t := res.Targets
		lat := res.Latency
		what := res.Name
		if t.Step != "" {
			for _, st := range res.Steps {
				if strings.EqualFold(st.Name, t.Step) {
					lat = st.Latency
				}
			}
			what += " (" + t.Step + ")"
		}
		if t.MinRPS > 0 {
			out = append(out, check{t.Issue, what + " requests/s at " + strconv.Itoa(res.Connections) + " connections",
				fmt.Sprintf(">= %.0f", t.MinRPS), fmt.Sprintf("%.0f", res.RPS), res.RPS >= t.MinRPS && res.Errors == 0})
		}
		if t.MaxP50Ms > 0 {
			out = append(out, check{t.Issue, what + " median latency", fmt.Sprintf("<= %g ms", t.MaxP50Ms),
				fmt.Sprintf("%.2f ms", lat.P50), lat.P50 > 0 && lat.P50 <= t.MaxP50Ms})
		}
		if t.MaxP99Ms > 0 {
			out = append(out, check{t.Issue, what + " p99 latency", fmt.Sprintf("< %g ms", t.MaxP99Ms),
				fmt.Sprintf("%.2f ms", lat.P99), lat.P99 > 0 && lat.P99 < t.MaxP99Ms})
		}
		if t.MaxRSSMiB > 0 {
			c := check{t.Issue, what + " server RSS under load", fmt.Sprintf("< %g MiB", t.MaxRSSMiB), "not sampled (-pid)", false}
			if res.RSS != nil {
				c.Measured, c.Met = fmt.Sprintf("%.1f MiB", res.RSS.Peak), res.RSS.Peak < t.MaxRSSMiB
			}
			out = append(out, c)
		}
	}
	for _, bt := range plan.Benchmarks {
		if rep.Benchmarks == nil {
			break
		}
		if bt.MaxNsPerOp <= 0 {
			continue
		}
		c := check{bt.Issue, bt.Label, fmt.Sprintf("<= %s", fmtNs(bt.MaxNsPerOp)), "not run", false}
		for _, b := range rep.Benchmarks {
			if b.Name != bt.Name {
				continue
			}
			// The issues' figures are per core: thread CPU time when the
			// benchmark reports it, wall time otherwise.
			if b.CPUNsPerOp > 0 {
				c.Measured = fmt.Sprintf("%s CPU (%s wall)", fmtNs(b.CPUNsPerOp), fmtNs(b.NsPerOp))
				c.Met = b.CPUNsPerOp <= bt.MaxNsPerOp
			} else {
				c.Measured, c.Met = fmtNs(b.NsPerOp), b.NsPerOp <= bt.MaxNsPerOp
			}
		}
		out = append(out, c)
	}
	return out
}

func fmtNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// printReport writes the tables for people.
func printReport(w io.Writer, rep *report) {
	fmt.Fprintf(w, "machine: %d CPUs, %s, Linux %s, %s, load average at start %s\n",
		rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.Kernel, rep.Machine.Go, rep.Machine.LoadAvg)
	if rep.Machine.Label != "" {
		fmt.Fprintf(w, "         %s\n", rep.Machine.Label)
	}
	if len(rep.Scenarios) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "scenario\tconns\treqs\treq/s\titer/s\tp50 ms\tp99 ms\tmax ms\terrors\tRSS before/peak/after MiB\t")
		for _, r := range rep.Scenarios {
			rss := "-"
			if r.RSS != nil {
				rss = fmt.Sprintf("%.1f / %.1f / %.1f", r.RSS.Before, r.RSS.Peak, r.RSS.After)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%d\t%s\t\n", r.Name, r.Connections, r.Requests,
				r.RPS, r.IterPS, r.Latency.P50, r.Latency.P99, r.Latency.Max, r.Errors, rss)
			for _, s := range r.Steps {
				fmt.Fprintf(tw, "  · %s\t\t%d\t\t\t%.2f\t%.2f\t%.2f\t\t\t\n", s.Name, s.Count, s.Latency.P50, s.Latency.P99, s.Latency.Max)
			}
		}
		tw.Flush()
		for _, r := range rep.Scenarios {
			for kind, n := range r.ErrorKinds {
				fmt.Fprintf(w, "  %s: %d × %s\n", r.Name, n, kind)
			}
		}
		printCPU(w, rep.Scenarios)
	}
	if s := rep.Soak; s != nil {
		fmt.Fprintln(w)
		printSoak(w, s)
	}
	if len(rep.Benchmarks) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "benchmark\truns\ttime/op\tthread CPU/op\tB/op\tallocs/op\t")
		for _, b := range rep.Benchmarks {
			cpu := "-"
			if b.CPUNsPerOp > 0 {
				cpu = fmtNs(b.CPUNsPerOp)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.0f\t%.0f\t\n", b.Name, b.Runs, fmtNs(b.NsPerOp), cpu, b.BytesPerOp, b.AllocsPerOp)
		}
		tw.Flush()
	}
	if rep.Mail != nil {
		fmt.Fprintf(w, "\nmail sink: %d messages received, %d Message-IDs received more than once\n", rep.Mail.Received, rep.Mail.Duplicates)
	}
	if len(rep.Checks) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "issue\ttarget\twanted\tmeasured\t")
		met := 0
		for _, c := range rep.Checks {
			mark := "MISSED"
			if c.Met {
				mark, met = "met", met+1
			}
			fmt.Fprintf(tw, "#%d\t%s\t%s\t%s\t%s\n", c.Issue, c.What, c.Target, c.Measured, mark)
		}
		tw.Flush()
		fmt.Fprintf(w, "%d of %d targets met\n", met, len(rep.Checks))
	}
}

func nowRFC3339() string { return time.Now().UTC().Format(time.RFC3339) }

// printCPU shows what each request cost in CPU time, and the throughput
// that implies with the machine's cores to the server and its database.
func printCPU(w io.Writer, results []*scenarioResult) {
	measured := false
	for _, r := range results {
		measured = measured || r.CPU != nil
	}
	if !measured {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tserver CPU ms/req\tdatabase CPU ms/req\tloadgen CPU ms/req\tprojected req/s on idle cores\t")
	for _, r := range results {
		if r.CPU == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.0f\t\n", r.Name, r.CPU.ServerMs, r.CPU.DatabaseMs, r.CPU.LoadgenMs, r.CPU.ProjectedRPS)
	}
	tw.Flush()
}
