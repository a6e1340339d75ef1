package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver, to find the server's database backends
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat times; it is 100 on
// every Linux platform Go supports.
const clockTicks = 100

// cpuMeter measures the CPU time that the server, its PostgreSQL
// backends and the load generator itself spend during a measured phase.
// On a machine shared with other work, throughput and latency depend on
// what else runs, but CPU time per request hardly does: it gives the
// capacity the same build would have with the cores to itself.
type cpuMeter struct {
	pid int
	db  *sql.DB // the server's database, to find its backends; nil to skip

	start, stop cpuSample
}

type cpuSample struct {
	server, database, loadgen time.Duration
	at                        time.Time
}

// cpuReport is CPU milliseconds per request over the measured phase.
type cpuReport struct {
	ServerMs   float64 `json:"serverMsPerRequest"`
	DatabaseMs float64 `json:"databaseMsPerRequest"`
	LoadgenMs  float64 `json:"loadgenMsPerRequest"`
	// ProjectedRPS is how many requests/s the server and its database
	// could serve with every core of this machine to themselves.
	ProjectedRPS float64 `json:"projectedRequestsPerSecond"`
}

func newCPUMeter(ctx context.Context, pid int, pgURL string) (*cpuMeter, error) {
	m := &cpuMeter{pid: pid}
	if pgURL != "" {
		db, err := sql.Open("pgx", pgURL)
		if err != nil {
			return nil, err
		}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("-pg-url: %w", err)
		}
		db.SetMaxOpenConns(1)
		m.db = db
	}
	return m, nil
}

func (m *cpuMeter) close() {
	if m != nil && m.db != nil {
		m.db.Close()
	}
}

func (m *cpuMeter) sample(ctx context.Context) cpuSample {
	s := cpuSample{at: time.Now()}
	if m.pid > 0 {
		s.server = procCPU(m.pid)
	}
	if m.db != nil {
		rows, err := m.db.QueryContext(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		if err == nil {
			for rows.Next() {
				var pid int
				if rows.Scan(&pid) == nil {
					s.database += procCPU(pid)
				}
			}
			rows.Close()
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.loadgen = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

// begin marks the start of a measured phase.
func (m *cpuMeter) begin(ctx context.Context) {
	if m != nil {
		m.start = m.sample(ctx)
	}
}

// finish marks the end of a measured phase.
func (m *cpuMeter) finish(ctx context.Context) {
	if m != nil {
		m.stop = m.sample(ctx)
	}
}

// report gives the CPU per request between begin and finish.
func (m *cpuMeter) report(requests int64) *cpuReport {
	if m == nil || requests <= 0 || m.pid <= 0 {
		return nil
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(requests) }
	r := &cpuReport{
		ServerMs:   per(m.stop.server - m.start.server),
		DatabaseMs: per(m.stop.database - m.start.database),
		LoadgenMs:  per(m.stop.loadgen - m.start.loadgen),
	}
	// Backends that closed during the phase take their CPU time with
	// them; a negative difference means the set changed, not free work.
	r.DatabaseMs = max(r.DatabaseMs, 0)
	if cost := r.ServerMs + r.DatabaseMs; cost > 0 {
		r.ProjectedRPS = float64(runtime.NumCPU()) * 1000 / cost
	}
	return r
}

// procCPU returns the user+system CPU time of pid (0 when it is gone).
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields are counted after its ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3 of the file, utime 14, stime 15.
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * time.Second / clockTicks
}
