// Command platformctl serves the platform API and runs its operator,
// designer and deploy commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/towerdefence/platformctl/internal/cli"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Set at link time: -ldflags "-X main.version=v1.2.3 -X main.commit=… -X main.date=…".
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	build := platform.Build{Version: version, Commit: commit, Date: date}
	if info, ok := debug.ReadBuildInfo(); ok {
		// A `go install` or `go build` without the release's -ldflags.
		build = build.WithBuildInfo(info)
	}
	code := cli.Run(ctx, build, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
