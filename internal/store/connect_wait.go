package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// waitingConnector keeps trying to open a connection for up to wait while
// no server of the URL accepts one: during a switchover or failover the old
// primary refuses or shuts down and the standby is still read-only for a
// few seconds (target_session_attrs=read-write turns it down). A request
// that needs a new connection then waits for the new primary instead of
// failing, within its own deadline. Errors that trying again cannot mend
// (a refused password, a missing database) return at once.
type waitingConnector struct {
	driver.Connector
	wait time.Duration
}

func (c waitingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	deadline := time.Now().Add(c.wait)
	pause := 50 * time.Millisecond
	for {
		conn, err := c.Connector.Connect(ctx)
		if err == nil || !worthReconnecting(err) || time.Now().Add(pause).After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// worthReconnecting reports whether a failed connection attempt may
// succeed shortly: the server is down, starting, shutting down or
// read-only, rather than refusing these credentials or this database.
func worthReconnecting(err error) bool {
	var connErr *pgconn.ConnectError
	if !errors.As(err, &connErr) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08")
	}
	return true
}
