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
	// Metrics counts streams and events; nil counts nothing.
	Metrics *Metrics
}

// Event is one event, encoded.
type Event struct {
	ID   uint64
	Type string
	Data []byte
	// shows is what the event is about, for its order and its delivery
	// lag; nil for the others. It is a pointer because every stream keeps
	// room for Options.Buffer events, open or idle.
	shows *shown
}

// shown is what an event shows of a change.
type shown struct {
	// lobby and version name the lobby state shown (a lobby.updated, a
	// snapshot with a lobby), which Stream.Admit orders.
	lobby   uuid.UUID
	version time.Time
	// at is when the change was published, from which the delivery lag
	// is measured; zero for a snapshot.
	at time.Time
}

// Stream is one open event stream of a player's session.
type Stream struct {
	Principal *auth.Principal
	events    chan Event
	done      chan struct{}
	once      sync.Once
	final     *Event
	reason    string // why it ended, once done is closed
	metrics   *Metrics
	// sent are the newest versions of the last lobbies the stream was
	// sent; only its writer (Admit) touches them.
	sent []lobbyVersion
}

type lobbyVersion struct {
	lobby   uuid.UUID
	version time.Time
}

// rememberedLobbies is how many lobbies a stream keeps the version of: a
// player is in one lobby at a time, and an overtaken event arrives within
// moments of the one that overtook it.
const rememberedLobbies = 4

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

// end ends the stream for reason (one of endReasons), with a final event
// to send, if any. Only the first end counts.
func (s *Stream) end(reason string, final *Event) {
	s.once.Do(func() {
		s.reason, s.final = reason, final
		close(s.done)
	})
}

func (s *Stream) player() uuid.UUID { return s.Principal.User.ID }

// Admit tells the stream's writer whether to send ev, and remembers the
// lobby version of what it admits. It refuses a lobby older than one the
// stream was sent: one lobby's events may overtake each other when they
// come from different processes, or when one was rendered from the
// database after a later change had committed. Lobby versions grow with
// every change (player.LobbyUpdate), so the stream never goes back.
func (s *Stream) Admit(ev Event) bool {
	if ev.shows == nil || ev.shows.lobby == uuid.Nil {
		return true
	}
	sh := ev.shows
	for i, v := range s.sent {
		if v.lobby == sh.lobby {
			if sh.version.Before(v.version) {
				s.metrics.eventDropped(droppedStale)
				return false
			}
			s.sent[i].version = sh.version
			return true
		}
	}
	if len(s.sent) == rememberedLobbies {
		s.sent = slices.Delete(s.sent, 0, 1)
	}
	s.sent = append(s.sent, lobbyVersion{lobby: sh.lobby, version: sh.version})
	return true
}

// Written records that the stream's writer wrote ev to its client.
func (s *Stream) Written(ev Event) { s.metrics.eventWritten(ev) }

// Hub holds this process's streams and turns changes into their events.
// Changes are handled by a few workers, each owning the changes of some
// lobbies and players, so that one lobby's changes are rendered in the
// order they arrive. This process's own lobby changes arrive at once and
// other processes' through the transport, so one may overtake another:
// each stream drops a lobby older than one it was sent (Stream.Admit).
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
	// origin marks the notices of this process's changes, which its hub
	// had at once (offer) and drops when they come back.
	origin uuid.UUID
	// served counts the streams served off their request (Go).
	served sync.WaitGroup
	nextID atomic.Uint64
	ready  chan struct{}
}

// job is a notice to handle, a lobby change, or (resync) a player to send
// a fresh snapshot.
type job struct {
	notice Notice
	// lobby is a lobby change: one of this process's with its State, or
	// another's from a notice. at is when it was published.
	lobby  *player.LobbyChange
	at     time.Time
	resync uuid.UUID
}

// workers is how many goroutines render events; each renders the notices
// of its share of lobbies and players in order.
const workers = 16

// Deps are what a Hub works with.
type Deps struct {
	Players *player.Service
	Auth    *auth.Service
	// Transport carries the notices between processes (or within one).
	Transport Transport
	Log       *slog.Logger
}

// New returns a hub over d.Transport.
func New(d Deps, opts Options) *Hub {
	h := &Hub{players: d.Players, auth: d.Auth, transport: d.Transport, log: d.Log, opts: opts,
		byPlayer: make(map[uuid.UUID][]*Stream), seed: maphash.MakeSeed(), origin: uuid.New(), ready: make(chan struct{})}
	// Until Run first listens, sessions other processes end go unheard
	// here: the session cache reads through until then.
	d.Auth.PauseSessionCache()
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
		h.auth.ResumeSessionCache()
		if listened {
			h.opts.Metrics.listenerReconnected()
			h.resync(ctx)
			return
		}
		// Sessions ended between start-up and now were told to no one
		// here: streams opened meanwhile check theirs.
		h.recheckSessions(ctx)
		listened = true
		close(h.ready)
	}
	// While the transport does not listen, notices of revoked sessions may
	// be missed: the session cache does not serve until it listens again.
	lost := h.auth.PauseSessionCache
	defer lost()
	if err := h.transport.Run(ctx, func(n Notice) { h.deliver(ctx, n) }, listening, lost); err != nil {
		h.log.Error("event transport stopped", "error", err)
	}
	wg.Wait()
}

// deliver queues a notice from the transport, unless it is one of this
// process's changes, which its hub had already. A session notice first
// makes the session cache forget the user's sessions, before any request
// could be served from it again.
func (h *Hub) deliver(ctx context.Context, n Notice) {
	if n.Kind == KindSession {
		h.auth.ForgetCachedSessions(n.Subject)
	}
	switch {
	case n.Origin == h.origin:
	case n.Kind == KindLobby:
		c := &player.LobbyChange{LobbyID: n.Subject, Change: n.Change, Removed: n.Removed, Audience: n.Audience}
		h.enqueue(ctx, n.Subject, job{lobby: c, at: publishedAt(n)})
	default:
		h.enqueue(ctx, n.Subject, job{notice: n})
	}
}

func (j job) kind() string {
	switch {
	case j.lobby != nil:
		return KindLobby
	case j.resync != uuid.Nil:
		return TypeSnapshot
	}
	return j.notice.Kind
}

// publishedAt is when n was published, or zero if it does not say.
func publishedAt(n Notice) time.Time {
	if n.At == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n.At)
}

// offer queues a lobby change of this process without waiting: false when
// its worker is behind by the whole queue.
func (h *Hub) offer(c player.LobbyChange) bool {
	select {
	case h.shard(c.LobbyID) <- job{lobby: &c, at: time.Now()}:
		return true
	default:
		return false
	}
}

// shard is the queue of the worker that owns key.
func (h *Hub) shard(key uuid.UUID) chan job {
	return h.shards[maphash.Comparable(h.seed, key)%uint64(len(h.shards))]
}

func (h *Hub) enqueue(ctx context.Context, key uuid.UUID, j job) {
	select {
	case h.shard(key) <- j:
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
				h.log.Warn("render events", "kind", j.kind(), "error", err)
			}
		}
	}
}

// ErrTooMany refuses a stream past the process-wide cap.
var ErrTooMany = platform.Errorf(platform.KindUnavailable, CodeTooManyStreams, "This server has as many event streams as it takes; retry shortly")

// Open registers a stream for the principal. Past the per-session or
// per-player cap the oldest stream ends with a stream.closed event.
func (h *Hub) Open(p *auth.Principal) (*Stream, error) {
	s := &Stream{Principal: p, events: make(chan Event, max(h.opts.Buffer, 1)), done: make(chan struct{}), metrics: h.opts.Metrics}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.total >= h.opts.Global {
		h.opts.Metrics.streamRefused()
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
		o.end(ClosedReplaced, h.closing(ClosedReplaced))
		list = slices.Delete(list, i, i+1)
		h.total--
	}
	h.byPlayer[p.User.ID] = append(list, s)
	h.total++
	h.opts.Metrics.streamOpened(h.total)
	return s, nil
}

// Close unregisters a stream; its handler calls it once on the way out,
// with why it ended unless the hub ended it (one of endReasons).
func (h *Hub) Close(s *Stream, reason string) {
	s.end(reason, nil)
	h.opts.Metrics.streamEnded(s.reason)
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.byPlayer[s.player()]
	if i := slices.Index(list, s); i >= 0 {
		list = slices.Delete(list, i, i+1)
		h.total--
		h.opts.Metrics.streamGone(h.total)
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
			s.end(ClosedShutdown, h.closing(ClosedShutdown))
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
		h.opts.Metrics.eventDropped(droppedLagging)
		s.end(ClosedLagging, h.closing(ClosedLagging))
	}
}

func (h *Hub) sendAll(streams []*Stream, ev Event) {
	for _, s := range streams {
		h.send(s, ev)
	}
}

// handle renders one notice for this process's streams.
func (h *Hub) handle(ctx context.Context, j job) error {
	switch {
	case j.resync != uuid.Nil:
		// A gap may have hidden the end of the player's sessions too.
		if err := h.session(ctx, Notice{Kind: KindSession, Subject: j.resync, Change: auth.EndedRevoked}); err != nil {
			return err
		}
		return h.snapshotTo(ctx, j.resync)
	case j.lobby != nil:
		return h.lobby(ctx, j.lobby, j.at)
	}
	n := j.notice
	switch n.Kind {
	case KindSocial:
		return h.social(ctx, n)
	case KindSession:
		return h.session(ctx, n)
	}
	return nil
}

// lobby renders a lobby change for its audience's streams in this
// process: from its State when it carries one, otherwise from the lobby as
// committed now. Each stream drops a state older than one it has sent
// (Stream.Admit), whichever way the two came.
func (h *Hub) lobby(ctx context.Context, c *player.LobbyChange, at time.Time) error {
	streams := h.local(c.Audience...)
	if len(streams) == 0 {
		return nil
	}
	recipients := make([]uuid.UUID, 0, len(streams))
	for id := range streams {
		recipients = append(recipients, id)
	}
	updates, err := h.players.LobbyUpdates(ctx, *c, recipients)
	if err != nil {
		return err
	}
	for id, u := range updates {
		ev, err := h.NewEvent(TypeLobbyUpdated, u)
		if err != nil {
			return err
		}
		ev.shows = &shown{lobby: u.LobbyID, version: u.Version, at: at}
		h.sendAll(streams[id], ev)
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
		ev, err := h.NewEvent(TypeSocialUpdated, u)
		if err != nil {
			return err
		}
		ev.shows = &shown{at: publishedAt(n)}
		h.sendAll(list, ev)
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
				ev, err := h.NewEvent(TypeSessionEnded, SessionEnded{Reason: endReason(n.Change)})
				if err != nil {
					return err
				}
				s.end(EndedSession, &ev)
			}
		}
	}
	return errors.Join(errs...)
}

// endReason is why a stream's session ended as the stream tells it: a
// notice of a change that ends no session (a profile or role change) that
// finds the session gone met a revocation.
func endReason(change string) string {
	switch change {
	case auth.EndedSignedOut, auth.EndedRevoked, auth.EndedPasswordChanged, auth.EndedExpired:
		return change
	}
	return auth.EndedRevoked
}

// resync sends every local player a fresh snapshot after notices may have
// been lost, once it has ended the streams whose session is gone.
func (h *Hub) resync(ctx context.Context) {
	for _, id := range h.localPlayers() {
		h.enqueue(ctx, id, job{resync: id})
	}
}

// recheckSessions ends the local streams whose session is gone.
func (h *Hub) recheckSessions(ctx context.Context) {
	for _, id := range h.localPlayers() {
		h.enqueue(ctx, id, job{notice: Notice{Kind: KindSession, Subject: id, Change: auth.EndedRevoked}})
	}
}

// localPlayers returns the players with a stream in this process.
func (h *Hub) localPlayers() []uuid.UUID {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]uuid.UUID, 0, len(h.byPlayer))
	for id := range h.byPlayer {
		ids = append(ids, id)
	}
	return ids
}

func (h *Hub) snapshotTo(ctx context.Context, playerID uuid.UUID) error {
	streams := h.local(playerID)[playerID]
	if len(streams) == 0 {
		return nil
	}
	snap, err := h.players.SnapshotOf(ctx, playerID)
	if err != nil {
		// Notices may have been lost and the stream cannot be brought up
		// to date (the database is failing over, say): rather than stay
		// open and stale, it closes, and its client reconnects for a
		// snapshot.
		for _, s := range streams {
			s.end(ClosedLagging, h.closing(ClosedLagging))
		}
		return err
	}
	ev, err := h.SnapshotEvent(snap)
	if err != nil {
		return err
	}
	h.sendAll(streams, ev)
	return nil
}

// SnapshotEvent encodes a snapshot, which sets where the stream's lobby
// stands.
func (h *Hub) SnapshotEvent(snap *player.Snapshot) (Event, error) {
	ev, err := h.NewEvent(TypeSnapshot, snap)
	if snap.Lobby != nil {
		ev.shows = &shown{lobby: snap.Lobby.ID, version: snap.Lobby.UpdatedAt}
	}
	return ev, err
}
