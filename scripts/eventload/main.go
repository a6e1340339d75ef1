// Command eventload measures the player event streams of a running serve:
//
//	eventload idle    -n 10000 -hold 45s -pid PID     idle streams: serve's RSS, heartbeat gaps, and
//	                  [-rounds 3 -c 32 -route-d 5s]   the hot routes' throughput without and with them
//	eventload latency -lobbies 100 -rate 200 -d 30s   delivery latency from a lobby action's
//	                  [-stream-base URL]              response to the event at the other member
//
// It prepares its players, sessions and lobbies directly in the database,
// as scripts/benchdata does, so run it with the serve's PLATFORM_* settings
// (database URL and secret). Actions and streams then go over HTTP to
// -base; with -stream-base the streams go to a second replica.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type options struct {
	base, streamBase   string
	n, lobbies, pid    int
	rate               float64
	hold, dur, hbEvery time.Duration
	rounds, conns      int
	routeDur           time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	if len(args) == 0 || (args[0] != "idle" && args[0] != "latency") {
		fmt.Fprintln(os.Stderr, "usage: eventload idle|latency [flags]  (eventload idle -h for the flags)")
		return 2
	}
	fs := flag.NewFlagSet("eventload "+args[0], flag.ContinueOnError)
	var o options
	fs.StringVar(&o.base, "base", "http://127.0.0.1:8080", "base URL of the serve taking actions (and streams)")
	fs.StringVar(&o.streamBase, "stream-base", "", "base URL of a second serve for the streams (default -base)")
	fs.IntVar(&o.n, "n", 10000, "idle: streams to hold open")
	fs.IntVar(&o.pid, "pid", 0, "idle: serve's process id, to read its RSS")
	fs.DurationVar(&o.hold, "hold", 45*time.Second, "idle: how long to hold the streams")
	fs.DurationVar(&o.hbEvery, "heartbeat", 15*time.Second, "idle: the serve's PLATFORM_EVENTS_HEARTBEAT")
	fs.IntVar(&o.rounds, "rounds", 3, "idle: rounds, each measuring the hot routes without and then with the streams")
	fs.IntVar(&o.conns, "c", 32, "idle: connections driving each hot route")
	fs.DurationVar(&o.routeDur, "route-d", 5*time.Second, "idle: measured time per hot route and round")
	fs.IntVar(&o.lobbies, "lobbies", 100, "latency: lobbies (host and guest each)")
	fs.Float64Var(&o.rate, "rate", 200, "latency: lobby actions per second")
	fs.DurationVar(&o.dur, "d", 30*time.Second, "latency: measured duration")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if o.streamBase == "" {
		o.streamBase = o.base
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var err error
	if args[0] == "idle" {
		err = idle(ctx, log, o)
	} else {
		err = latency(ctx, log, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "eventload:", err)
		return 1
	}
	return 0
}
