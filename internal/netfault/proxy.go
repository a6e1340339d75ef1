// Package netfault is a TCP proxy whose link can be cut, so that tests
// and scripts can take a dependency (PostgreSQL, an SMTP relay) away
// from a running service without touching the dependency itself — the
// database server stays up for everyone else on the machine.
package netfault

import (
	"net"
	"sync"
	"time"
)

// Mode is the state of the link.
type Mode int

// Modes of a Proxy.
const (
	// Up forwards bytes both ways.
	Up Mode = iota
	// Refuse resets every open connection and accepts new ones only to
	// close them at once, as a crashed server or a closed port looks to
	// a client.
	Refuse
	// Blackhole keeps connections open but forwards nothing, in either
	// direction, as a network partition or a hung server looks: clients
	// learn of it only through their own timeouts.
	Blackhole
)

func (m Mode) String() string {
	switch m {
	case Up:
		return "up"
	case Refuse:
		return "refuse"
	case Blackhole:
		return "blackhole"
	}
	return "unknown"
}

// Proxy listens on a loopback port and forwards to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    Mode
	changed chan struct{} // closed and replaced on every mode change
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Listen starts a proxy on a free loopback port in front of target.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port; point the client here.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Set switches the link to m. Switching to Refuse resets every open
// connection; switching away from Blackhole lets held bytes flow again
// (Up) or drops them with the connection (Refuse).
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
	var victims []net.Conn
	if m == Refuse {
		for c := range p.conns {
			victims = append(victims, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		reset(c)
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode, closed := p.mode, p.closed
		p.mu.Unlock()
		if closed || mode == Refuse {
			reset(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve connects to the target (once the link is up) and pumps both ways.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	if !p.waitUp(client) {
		return
	}
	upstream, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		reset(client)
		return
	}
	if !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)
	done := make(chan struct{}, 2)
	go func() { p.pump(upstream, client); done <- struct{}{} }()
	go func() { p.pump(client, upstream); done <- struct{}{} }()
	<-done
	client.Close()
	upstream.Close()
	<-done
}

// pump copies src to dst chunk by chunk, holding each chunk while the
// link is blackholed and giving up when it is refused.
func (p *Proxy) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitUp(src) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or reset: serve closes both sides
		}
	}
}

// waitUp blocks while the link is blackholed; it reports false when the
// link is refused or the proxy closed (c has then been reset).
func (p *Proxy) waitUp(c net.Conn) bool {
	for {
		p.mu.Lock()
		mode, closed, changed := p.mode, p.closed, p.changed
		p.mu.Unlock()
		switch {
		case closed:
			return false
		case mode == Up:
			return true
		case mode == Refuse:
			reset(c)
			return false
		}
		<-changed
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// reset closes c with an RST rather than a FIN, as a crashed peer does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0) //nolint:errcheck // falls back to a normal close
	}
	c.Close()
}
