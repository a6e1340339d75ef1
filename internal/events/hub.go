package events

import (
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
)

// Event types, as a stream names them.
const (
	TypeSnapshot      = "snapshot"
	TypeLobbyUpdated  = "lobby.updated"
	TypeSocialUpdated = "social.updated"
	TypeSessionEnded  = "session.ended"
	TypeStreamClosed  = "stream.closed"
)

// Why a stream closed without its session ending.
const (
	ClosedReplaced = "replaced" // a newer stream of the session or player took its place
	ClosedShutdown = "shutdown" // the server is stopping; reconnect elsewhere
	ClosedLagging  = "lagging"  // the client read too slowly; reconnect for a snapshot
)

// CodeTooManyStreams answers a stream past the process-wide cap.
const CodeTooManyStreams = "TOO_MANY_STREAMS"

// Options are the stream limits.
type Options struct {
	// PerSession and PerPlayer cap the streams of one session and of one
	// player; opening one more closes the oldest.
	PerSession, PerPlayer int
	// Global caps the streams of this process; past it, Open refuses.
	Global int
	// Buffer is how many events a stream may have waiting for its client
	// before it is closed as lagging.
	Buffer int
}

// Event is one event, encoded.
type Event struct {
	ID   uint64
	Type string
	Data []byte
}

// Stream is one open event stream of a player's session.
type Stream struct {
	Principal *auth.Principal
	events    chan Event
	done      chan struct{}
	once      sync.Once
	final     *Event
}

// Events delivers the stream's events in order.
func (s *Stream) Events() <-chan Event { return s.events }

// Done is closed when the stream must end; Final then tells what to send
// last, if anything.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Final is the last event to send once Done is closed, or nil.
func (s *Stream) Final() *Event {
	select {
	case <-s.done:
		return s.final
	default:
		return nil
	}
}

func (s *Stream) end(final *Event) {
	s.once.Do(func() {
		s.final = final
		close(s.done)
	})
}

func (s *Stream) player() uuid.UUID { return s.Principal.User.ID }

// Hub holds this process's streams and turns notices into their events.
// Notices are handled by a few workers, each owning the notices of some
// lobbies and players, so that one lobby's events keep their order.
type Hub struct {
	players   *player.Service
	auth      *auth.Service
	transport Transport
	log       *slog.Logger
	opts      Options

	mu       sync.Mutex
	byPlayer map[uuid.UUID][]*Stream
	total    int
	closed   bool

	shards []chan job
	seed   maphash.Seed
	// served counts the streams served off their request (Go).
	served sync.WaitGroup
	nextID atomic.Uint64
	ready  chan struct{}
}

// job is a notice to handle, or (resync) a player to send a fresh snapshot.
type job struct {
	notice Notice
	resync uuid.UUID
}

// workers is how many goroutines render events; each renders the notices
// of its share of lobbies and players in order.
const workers = 16

// NewHub returns a hub over transport.
func NewHub(players *player.Service, authSvc *auth.Service, transport Transport, log *slog.Logger, opts Options) *Hub {
	h := &Hub{players: players, auth: authSvc, transport: transport, log: log, opts: opts,
		byPlayer: make(map[uuid.UUID][]*Stream), seed: maphash.MakeSeed(), ready: make(chan struct{})}
	h.nextID.Store(uint64(time.Now().UnixMicro()))
	for range workers {
		h.shards = append(h.shards, make(chan job, 1024))
	}
	return h
}

// Ready is closed once Run first listens for notices.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Run delivers notices to streams until ctx is done.
func (h *Hub) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, sh := range h.shards {
		wg.Go(func() { h.work(ctx, sh) })
	}
	listened := false // the transport calls listening from one goroutine
	listening := func() {
		if listened {
			h.resync(ctx)
			return
		}
		listened = true
		close(h.ready)
	}
	err := h.transport.Run(ctx, func(n Notice) { h.enqueue(ctx, n.shardKey(), job{notice: n}) }, listening)
	if err != nil {
		h.log.Error("event transport stopped", "error", err)
	}
	wg.Wait()
}

func (n Notice) shardKey() uuid.UUID { return n.Subject }

func (h *Hub) enqueue(ctx context.Context, key uuid.UUID, j job) {
	sh := h.shards[maphash.Comparable(h.seed, key)%uint64(len(h.shards))]
	select {
	case sh <- j:
	case <-ctx.Done():
	}
}

func (h *Hub) work(ctx context.Context, jobs chan job) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-jobs:
			if err := h.handle(ctx, j); err != nil && ctx.Err() == nil {
				h.log.Warn("render events", "kind", j.notice.Kind, "error", err)
			}
		}
	}
}

// ErrTooMany refuses a stream past the process-wide cap.
var ErrTooMany = platform.Errorf(platform.KindUnavailable, CodeTooManyStreams, "This server has as many event streams as it takes; retry shortly")

// Open registers a stream for the principal. Past the per-session or
// per-player cap the oldest stream ends with a stream.closed event.
func (h *Hub) Open(p *auth.Principal) (*Stream, error) {
	s := &Stream{Principal: p, events: make(chan Event, max(h.opts.Buffer, 1)), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.total >= h.opts.Global {
		return nil, ErrTooMany
	}
	list := h.byPlayer[p.User.ID]
	sameSession := 0
	for _, o := range list {
		if o.Principal.Session.ID == p.Session.ID {
			sameSession++
		}
	}
	for i := 0; i < len(list) && (len(list) >= h.opts.PerPlayer || sameSession >= h.opts.PerSession); {
		o := list[i]
		if len(list) < h.opts.PerPlayer && o.Principal.Session.ID != p.Session.ID {
			i++
			continue
		}
		if o.Principal.Session.ID == p.Session.ID {
			sameSession--
		}
		o.end(h.closing(ClosedReplaced))
		list = slices.Delete(list, i, i+1)
		h.total--
	}
	h.byPlayer[p.User.ID] = append(list, s)
	h.total++
	return s, nil
}

// Close unregisters a stream; its handler calls it on the way out.
func (h *Hub) Close(s *Stream) {
	s.end(nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.byPlayer[s.player()]
	if i := slices.Index(list, s); i >= 0 {
		list = slices.Delete(list, i, i+1)
		h.total--
	}
	if len(list) == 0 {
		delete(h.byPlayer, s.player())
	} else {
		h.byPlayer[s.player()] = list
	}
}

// Count returns how many streams are open.
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Shutdown ends every stream with stream.closed and refuses new ones, so
// that serve's drain is not held up by streams that never finish.
func (h *Hub) Shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, list := range h.byPlayer {
		for _, s := range list {
			s.end(h.closing(ClosedShutdown))
		}
	}
}

// Go runs a stream's writer off its request; Wait waits for them all.
// After Shutdown, fn runs at once on the caller's goroutine: its stream
// has already ended.
func (h *Hub) Go(fn func()) {
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.served.Add(1)
	}
	h.mu.Unlock()
	if closed {
		fn()
		return
	}
	go func() {
		defer h.served.Done()
		fn()
	}()
}

// Wait shuts the hub down and waits until every stream that Go runs has
// ended, or ctx is done. Serve calls it after the server's Shutdown, so
// that streams write their final event before the process exits.
func (h *Hub) Wait(ctx context.Context) {
	h.Shutdown()
	done := make(chan struct{})
	go func() { h.served.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// NewEvent encodes an event with the next id.
func (h *Hub) NewEvent(typ string, data any) (Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return Event{ID: h.nextID.Add(1), Type: typ, Data: b}, nil
}

// StreamClosed is the payload of stream.closed.
type StreamClosed struct {
	Reason string `json:"reason"`
}

// SessionEnded is the payload of session.ended.
type SessionEnded struct {
	Reason string `json:"reason"`
}

func (h *Hub) closing(reason string) *Event {
	ev, _ := h.NewEvent(TypeStreamClosed, StreamClosed{Reason: reason}) //nolint:errcheck // a struct of strings always encodes
	return &ev
}

// local returns the streams of the players that this process serves.
func (h *Hub) local(ids ...uuid.UUID) map[uuid.UUID][]*Stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out map[uuid.UUID][]*Stream
	for _, id := range ids {
		if list := h.byPlayer[id]; len(list) > 0 {
			if out == nil {
				out = make(map[uuid.UUID][]*Stream)
			}
			out[id] = slices.Clone(list)
		}
	}
	return out
}

// send queues an event on a stream; a stream whose client lags by the
// whole buffer ends, and its client reconnects for a snapshot.
func (h *Hub) send(s *Stream, ev Event) {
	select {
	case s.events <- ev:
	default:
		s.end(h.closing(ClosedLagging))
	}
}

func (h *Hub) sendAll(streams []*Stream, typ string, data any) error {
	ev, err := h.NewEvent(typ, data)
	if err != nil {
		return err
	}
	for _, s := range streams {
		h.send(s, ev)
	}
	return nil
}

// handle renders one notice for this process's streams.
func (h *Hub) handle(ctx context.Context, j job) error {
	if j.resync != uuid.Nil {
		return h.snapshotTo(ctx, j.resync)
	}
	n := j.notice
	switch n.Kind {
	case KindLobby:
		return h.lobby(ctx, n)
	case KindSocial:
		return h.social(ctx, n)
	case KindSession:
		return h.session(ctx, n)
	}
	return nil
}

func (h *Hub) lobby(ctx context.Context, n Notice) error {
	streams := h.local(n.Audience...)
	if len(streams) == 0 {
		return nil
	}
	recipients := make([]uuid.UUID, 0, len(streams))
	for id := range streams {
		recipients = append(recipients, id)
	}
	updates, err := h.players.LobbyUpdates(ctx, player.LobbyChange{LobbyID: n.Subject, Change: n.Change, Removed: n.Removed}, recipients)
	if err != nil {
		return err
	}
	for id, u := range updates {
		if err := h.sendAll(streams[id], TypeLobbyUpdated, u); err != nil {
			return err
		}
	}
	return nil
}

func (h *Hub) social(ctx context.Context, n Notice) error {
	c := player.SocialChange{Actor: n.Subject, Target: n.Other, Action: n.Change, TargetSees: n.TargetSees}
	for id, list := range h.local(n.Subject, n.Other) {
		u, err := h.players.SocialUpdateFor(ctx, c, id)
		if err != nil {
			return err
		}
		if u == nil {
			continue
		}
		if err := h.sendAll(list, TypeSocialUpdated, u); err != nil {
			return err
		}
	}
	return nil
}

// session ends the streams of the user whose sessions are gone.
func (h *Hub) session(ctx context.Context, n Notice) error {
	var errs []error
	for _, list := range h.local(n.Subject) {
		for _, s := range list {
			live, err := h.auth.SessionLive(ctx, s.Principal)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !live {
				ev, err := h.NewEvent(TypeSessionEnded, SessionEnded{Reason: n.Change})
				if err != nil {
					return err
				}
				s.end(&ev)
			}
		}
	}
	return errors.Join(errs...)
}

// resync sends every local player a fresh snapshot after notices may have
// been lost.
func (h *Hub) resync(ctx context.Context) {
	h.mu.Lock()
	ids := make([]uuid.UUID, 0, len(h.byPlayer))
	for id := range h.byPlayer {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.enqueue(ctx, id, job{resync: id})
	}
}

func (h *Hub) snapshotTo(ctx context.Context, playerID uuid.UUID) error {
	streams := h.local(playerID)[playerID]
	if len(streams) == 0 {
		return nil
	}
	snap, err := h.players.SnapshotOf(ctx, playerID)
	if err != nil {
		return err
	}
	return h.sendAll(streams, TypeSnapshot, snap)
}
