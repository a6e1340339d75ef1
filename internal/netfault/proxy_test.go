package netfault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c) //nolint:errcheck // ends with the connection
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string, wait time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProxyModes(t *testing.T) {
	p, err := Listen(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	kept := dial(t, p)
	if got, err := roundTrip(kept, "one", 2*time.Second); err != nil || got != "one\n" {
		t.Fatalf("up: %q, %v", got, err)
	}

	p.Set(Blackhole)
	held := dial(t, p)
	if _, err := roundTrip(kept, "two", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole on an open connection: want a timeout, got %v", err)
	}
	if _, err := roundTrip(held, "three", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole on a new connection: want a timeout, got %v", err)
	}

	// Held bytes flow once the link is back.
	p.Set(Up)
	for c, want := range map[net.Conn]string{kept: "two\n", held: "three\n"} {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != want {
			t.Fatalf("after blackhole: %q, %v; want %q", line, err, want)
		}
	}

	p.Set(Refuse)
	if _, err := roundTrip(kept, "four", 2*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("refuse on an open connection: want a reset, got %v", err)
	}
	// A new connection is reset at once, during connect or right after.
	if fresh, err := net.Dial("tcp", p.Addr()); err == nil {
		_, err = roundTrip(fresh, "five", 2*time.Second)
		fresh.Close()
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("refuse on a new connection: want a reset, got %v", err)
		}
	}

	p.Set(Up)
	again := dial(t, p)
	if got, err := roundTrip(again, "six", 2*time.Second); err != nil || got != "six\n" {
		t.Fatalf("up again: %q, %v", got, err)
	}
}
