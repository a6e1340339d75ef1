package httpapi

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/testwait"
)

// TestHeartbeatFindsAClosedClient checks that a hijacked stream notices a
// client that closed its end at the first heartbeat after, without writing
// into the void first, and that an open client's heartbeat goes out.
func TestHeartbeatFindsAClosedClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	cw := &chunkWriter{conn: server, timeout: time.Second}
	defer cw.close()

	if err := cw.comment("heartbeat"); err != nil {
		t.Fatalf("heartbeat to an open client: %v", err)
	}
	if err := client.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	want := "d\r\n: heartbeat\n\n\r\n" // one chunk of 13 bytes
	got := make([]byte, len(want))
	if _, err := io.ReadFull(client, got); err != nil || string(got) != want {
		t.Fatalf("client read %q (%v), want %q", got, err, want)
	}

	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	// The client's FIN crosses the loopback at once, but give it a moment
	// on a loaded machine; a heartbeat must then end the stream.
	testwait.For(t, 5*time.Second, "the closed client to be noticed", cw.peerGone)
	if err := cw.comment("heartbeat"); !errors.Is(err, errPeerGone) {
		t.Fatalf("heartbeat to a closed client: %v, want errPeerGone", err)
	}
}
