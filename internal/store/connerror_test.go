package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
)

func TestMapErrorTreatsLostConnectionsAsUnavailable(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("look up session: %w", io.ErrUnexpectedEOF),
		fmt.Errorf("query: %w", io.EOF),
		fmt.Errorf("query: %w", context.DeadlineExceeded),
		errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"),
	} {
		pe, ok := platform.As(mapError(err))
		if !ok || pe.Kind != platform.KindUnavailable {
			t.Errorf("mapError(%v) = %v, want SERVICE_UNAVAILABLE", err, mapError(err))
		}
	}
	plain := errors.New("syntax error at or near SELEKT")
	if got := mapError(plain); got != plain {
		t.Errorf("mapError(%v) = %v, want it unchanged", plain, got)
	}
}
