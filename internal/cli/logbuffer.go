package cli

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushInterval bounds how long a log line of serve may wait in the
// buffer before it reaches stderr.
const logFlushInterval = 100 * time.Millisecond

// logBuffer collects serve's log lines and writes them out in batches:
// every logFlushInterval, when 64 KiB have gathered, at once for warnings
// and errors, and on Close. An access log line per request would
// otherwise cost a write system call per request, a large part of what a
// small request costs. A crash loses at most the last interval's info
// lines; warnings and errors are never held.
type logBuffer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushEvery(logFlushInterval)
	return b
}

// Write implements io.Writer. slog handlers write one whole line per call.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

// Flush writes out what the buffer holds.
func (b *logBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

func (b *logBuffer) flushEvery(d time.Duration) {
	defer close(b.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.Flush() //nolint:errcheck // stderr is gone; nothing to tell
		case <-b.stop:
			return
		}
	}
}

// Close stops the flusher and writes out the rest.
func (b *logBuffer) Close() error {
	close(b.stop)
	<-b.done
	return b.Flush()
}

// flushOnWarn is a slog.Handler that flushes its buffer after every record
// at warning level or above, so trouble is never held back.
type flushOnWarn struct {
	slog.Handler
	buf *logBuffer
}

func (h flushOnWarn) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.buf.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushOnWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushOnWarn{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushOnWarn) WithGroup(name string) slog.Handler {
	return flushOnWarn{h.Handler.WithGroup(name), h.buf}
}

// newBufferedLogger is newLogger writing through a logBuffer; the caller
// closes the buffer when the process is done logging.
func newBufferedLogger(build func(*env) *slog.Logger, e *env) (*slog.Logger, *logBuffer) {
	buf := newLogBuffer(e.stderr)
	be := *e
	be.stderr = buf
	return slog.New(flushOnWarn{build(&be).Handler(), buf}), buf
}
