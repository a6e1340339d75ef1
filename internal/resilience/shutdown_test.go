package resilience_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// loadRequest is one kind of request of the shutdown load.
type loadRequest struct {
	method, path string
	body         []byte
	want         int
	// header is added to the request (cookies, origin).
	header http.Header
}

// outcome is what one client saw of one request.
type outcome struct {
	id     string
	status int
	err    error
	done   time.Time
}

// TestSIGTERMDuringLoad stops a loaded server with SIGTERM. The server
// must finish every request it accepted — each request the server logged
// reached its client with the expected status — and exit 0. Requests it
// never accepted (new connections after the listener closed, or a
// keep-alive connection closed while idle) may fail on the client, which
// is how a draining server tells clients to go elsewhere; those must be
// absent from the server's log.
func TestSIGTERMDuringLoad(t *testing.T) {
	srv := startServe(t, map[string]string{
		"PLATFORM_DATABASE_URL":     storetest.URL(t),
		"PLATFORM_SHUTDOWN_TIMEOUT": "20s",
		// Sign-ins from one address, over and over, are what the limits stop.
		"PLATFORM_RATE_LIMIT_LOGIN_IP":      "off",
		"PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT": "off",
	})
	cookie, email := srv.signUpWithEmail(t)
	session := http.Header{"Cookie": {cookie}, "Origin": {srv.URL}}
	signIn, err := json.Marshal(map[string]string{"email": email, "password": apitest.DefaultPassword})
	if err != nil {
		t.Fatal(err)
	}
	// Two clients sign in over and over: hashing the password makes it
	// the slowest request, so some are in flight when the signal comes.
	slowMix := []loadRequest{
		{method: "POST", path: "/api/auth/player/sign-in/email", body: signIn, want: http.StatusOK, header: http.Header{"Origin": {srv.URL}}},
	}
	mix := []loadRequest{
		{method: "GET", path: "/api/health", want: http.StatusOK},
		{method: "GET", path: "/api/player/decks", want: http.StatusOK, header: session},
		{method: "GET", path: "/api/content/catalog", want: http.StatusOK},
		{method: "GET", path: "/api/player/lobbies", want: http.StatusOK, header: session},
		{method: "POST", path: "/api/player/decks/import", body: []byte(`{"code":"not-a-deck"}`), want: http.StatusBadRequest, header: session},
	}

	const workers = 8
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
		stop     = make(chan struct{})
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				lr := mix[(w+n)%len(mix)]
				if w < 2 {
					lr = slowMix[n%len(slowMix)]
				}
				o := outcome{id: fmt.Sprintf("shutdown-%d-%d", w, n)}
				req, err := http.NewRequest(lr.method, srv.URL+lr.path, bytes.NewReader(lr.body))
				if err != nil {
					t.Error(err)
					return
				}
				for k, vs := range lr.header {
					req.Header[k] = vs
				}
				req.Header.Set("X-Request-Id", o.id)
				if lr.body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				res, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, res.Body) //nolint:errcheck // only the status matters
					res.Body.Close()
					o.status = res.StatusCode
					if o.status != lr.want {
						err = fmt.Errorf("%s %s: status %d, want %d", lr.method, lr.path, o.status, lr.want)
					}
				}
				o.err, o.done = err, time.Now()
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
				if err != nil && o.status == 0 {
					return // the server stopped accepting; this client is done
				}
			}
		}()
	}

	// Load until a good number of requests went through (a slow machine
	// takes longer), then stop the server in the middle of it.
	loadStart := time.Now()
	testwait.For(t, 20*time.Second, "a second of load and 100 requests through", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes) >= 100 && time.Since(loadStart) > time.Second
	})
	// A request the server is in the middle of reading when the signal
	// comes: it must still be answered, though the rest of its body comes
	// only once the server has stopped taking connections.
	finishSlow := startSlowRequest(t, srv.URL, session, "/api/player/decks/import", []byte(`{"code":"not-a-deck","name":"slow"}`))
	signalled := time.Now()
	srv.signal(syscall.SIGTERM)
	testwait.For(t, 10*time.Second, "the listener to close after SIGTERM", func() bool { return refusesConnections(t, srv.URL) })
	slowStatus, err := finishSlow()
	if err != nil {
		t.Errorf("the request in flight at SIGTERM got no answer: %v", err)
	} else if slowStatus != http.StatusBadRequest {
		t.Errorf("the request in flight at SIGTERM answered %d, want 400", slowStatus)
	}
	time.AfterFunc(10*time.Second, func() { close(stop) })
	wg.Wait()
	if code := srv.wait(30 * time.Second); code != 0 {
		t.Fatalf("serve exited with %d after SIGTERM, want 0", code)
	}

	served := map[string]float64{}
	for _, line := range srv.logLines("request") {
		if id, ok := line["request_id"].(string); ok {
			status, _ := line["status"].(float64)
			served[id] = status
		}
	}
	var ok, afterSignal, refused int
	for _, o := range outcomes {
		_, wasServed := served[o.id]
		switch {
		case o.err == nil:
			ok++
			if o.done.After(signalled) {
				afterSignal++
			}
		case o.status != 0:
			t.Errorf("request %s: %v", o.id, o.err)
		case wasServed:
			t.Errorf("request %s was served (status %v) but its client got %v", o.id, served[o.id], o.err)
		default:
			refused++
		}
	}
	t.Logf("%d requests answered (%d of them after SIGTERM), %d not accepted after the listener closed", ok, afterSignal, refused)
	if ok < 50 {
		t.Fatalf("only %d requests answered: the load did not run", ok)
	}
	if len(srv.logLines("stopped")) != 1 {
		t.Errorf("serve did not log a clean stop")
	}
}

// startSlowRequest sends the headers and half the body of a POST, waits
// until the server is reading it, and returns a function that sends the
// rest and reads the status of the answer. The request expects 100
// Continue: the server sends it when its handler starts reading the body,
// which is how the test knows the request is in the handler's hands.
func startSlowRequest(t *testing.T, base string, header http.Header, path string, body []byte) func() (int, error) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Request-Id: shutdown-slow\r\nExpect: 100-continue\r\n",
		path, u.Host, len(body))
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")
	head.Write(body[:len(body)/2])
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	answers := bufio.NewReader(conn)
	if res, err := http.ReadResponse(answers, nil); err != nil || res.StatusCode != http.StatusContinue {
		t.Fatalf("the slow request's first answer: %v %v, want 100 Continue", res, err)
	}
	return func() (int, error) {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(body[len(body)/2:]); err != nil {
			return 0, err
		}
		res, err := http.ReadResponse(answers, nil)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		if _, err := io.ReadAll(res.Body); err != nil {
			return 0, err
		}
		return res.StatusCode, nil
	}
}

// refusesConnections reports whether a new connection to base is refused,
// as it is once a draining server has closed its listener.
func refusesConnections(t *testing.T, base string) bool {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	conn.Close()
	return false
}
