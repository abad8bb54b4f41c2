// Package faultproxy is an HTTP proxy for tests that sits between the bridge
// and a real server and injects the faults of real networks: streams cut
// mid-event, error pages from gateways, slow or silent servers. It exists so
// that the relay's guarantees (every request answered exactly once, nothing
// but protocol on stdout) are tested against real servers, not only fakes.
package faultproxy

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fault says what to do with one request. The zero Fault forwards it as is.
type Fault struct {
	// Status, if non-zero, answers the request directly with this status,
	// Body and ContentType, without forwarding it.
	Status      int
	Body        string
	ContentType string
	Header      http.Header

	// Delay holds the request this long before acting on it.
	Delay time.Duration

	// CutAfterEvents forwards the request, then cuts an SSE response after
	// this many complete events by resetting the connection (0: no cut).
	CutAfterEvents int
	// CloseAfterEvents is like CutAfterEvents, but ends the response cleanly,
	// as a server that closes a stream to make the client poll.
	CloseAfterEvents int
	// Garbage is written into an SSE response before the first forwarded
	// event (raw bytes, e.g. "data: {not json\n\n").
	Garbage string

	// Stall forwards the request, then StallAfterEvents events of an SSE
	// response (0: only the headers), then stops forwarding anything while
	// keeping the connection open: a silently dead path, as after a laptop
	// slept behind a NAT or a middlebox that hangs. The upstream request ends
	// when the client gives up on the connection.
	Stall            bool
	StallAfterEvents int
	// TruncateAfterEvents forwards this many complete events of an SSE
	// response, then the first half of the next one, then ends the response
	// cleanly: a stream that stops in the middle of an event (0: no cut).
	TruncateAfterEvents int

	// OnStatus replaces an upstream answer with the given status by the
	// Fault's Status, Body, ContentType and Header: for example a 404 for an
	// unknown session rewritten into the 400 some servers send instead.
	OnStatus map[int]Fault
}

// streamFault reports whether f needs the proxy's own forwarding.
func (f Fault) streamFault() bool {
	return f.CutAfterEvents != 0 || f.CloseAfterEvents != 0 || f.Garbage != "" ||
		f.Stall || f.TruncateAfterEvents != 0 || f.OnStatus != nil
}

// Request describes a request the proxy saw.
type Request struct {
	Method      string
	Header      http.Header
	Body        []byte
	LastEventID string
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	URL string // the proxy's URL with the target's path

	rp  *httputil.ReverseProxy
	srv *httptest.Server
	n   atomic.Int64

	mu     sync.Mutex
	target *url.URL
	rule   func(r *Request, n int) Fault
	seen   []Request
}

// New starts a proxy in front of target (a full endpoint URL). It is closed
// at the end of the test.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: u}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := p.currentTarget()
			pr.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			pr.Out.URL.Path = pr.In.URL.Path
			pr.Out.Host = u.Host
		},
		FlushInterval: -1,
		// Cut connections are the point of this proxy: not worth a log line.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	p.URL = p.srv.URL + u.Path
	return p
}

// SetRule installs the function that picks a fault for each request; n
// counts requests from 1. Nil forwards everything.
func (p *Proxy) SetRule(rule func(r *Request, n int) Fault) {
	p.mu.Lock()
	p.rule = rule
	p.mu.Unlock()
}

// SetTarget sends later requests to another server (same path), as when a
// server restarts on another port. Connections already forwarded stay where
// they are.
func (p *Proxy) SetTarget(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.target = u
	p.mu.Unlock()
	return nil
}

func (p *Proxy) currentTarget() *url.URL {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// Requests returns what the proxy has seen so far.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.seen...)
}

// CloseClientConnections resets every open connection, like a network drop.
func (p *Proxy) CloseClientConnections() { p.srv.CloseClientConnections() }

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	req := &Request{Method: r.Method, Header: r.Header.Clone(), Body: body, LastEventID: r.Header.Get("Last-Event-ID")}
	n := int(p.n.Add(1))
	p.mu.Lock()
	p.seen = append(p.seen, *req)
	rule := p.rule
	p.mu.Unlock()
	var f Fault
	if rule != nil {
		f = rule(req, n)
	}
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.Status != 0 {
		answer(w, f)
		return
	}
	if !f.streamFault() {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.forwardCutting(w, r, body, f)
}

// answer writes f's canned response.
func answer(w http.ResponseWriter, f Fault) {
	for k, vs := range f.Header {
		w.Header()[k] = vs
	}
	if f.ContentType != "" {
		w.Header().Set("Content-Type", f.ContentType)
	}
	w.WriteHeader(f.Status)
	io.WriteString(w, f.Body)
}

// forwardCutting forwards r itself (not through ReverseProxy, which turns
// any early end into an aborted response) and applies f's stream faults.
func (p *Proxy) forwardCutting(w http.ResponseWriter, r *http.Request, body []byte, f Fault) {
	target := p.currentTarget()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.Scheme+"://"+target.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if alt, ok := f.OnStatus[resp.StatusCode]; ok {
		answer(w, alt)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	flush := func() {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	if !bytes.HasPrefix([]byte(resp.Header.Get("Content-Type")), []byte("text/event-stream")) {
		io.Copy(w, resp.Body)
		return
	}
	if f.Garbage != "" {
		io.WriteString(w, f.Garbage)
		flush()
	}
	stall := func() {
		// Hold the connection open and forward nothing until the client
		// leaves; returning then closes the upstream stream too.
		flush()
		<-r.Context().Done()
	}
	if f.Stall && f.StallAfterEvents == 0 {
		stall()
		return
	}
	br := bufio.NewReader(resp.Body)
	events := 0
	var ev []byte
	for {
		line, err := br.ReadBytes('\n')
		ev = append(ev, line...)
		if err != nil {
			w.Write(ev)
			return
		}
		if len(bytes.TrimRight(line, "\r\n")) != 0 {
			continue
		}
		w.Write(ev)
		flush()
		ev = ev[:0]
		events++
		if f.CutAfterEvents > 0 && events >= f.CutAfterEvents {
			reset(w)
			return
		}
		if f.CloseAfterEvents > 0 && events >= f.CloseAfterEvents {
			return // a clean end of the response
		}
		if f.Stall && events >= f.StallAfterEvents {
			stall()
			return
		}
		if f.TruncateAfterEvents > 0 && events >= f.TruncateAfterEvents {
			next := nextEvent(br)
			w.Write(next[:len(next)/2])
			flush()
			return // a clean end in the middle of an event
		}
	}
}

// nextEvent reads the next complete event (up to its blank line) from br.
func nextEvent(br *bufio.Reader) []byte {
	var ev []byte
	for {
		line, err := br.ReadBytes('\n')
		ev = append(ev, line...)
		if err != nil || len(bytes.TrimRight(line, "\r\n")) == 0 {
			return ev
		}
	}
}

// reset kills the client's connection without a clean end of stream.
func reset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// Forward sends r on to target (a full URL: the request's own host and path
// are ignored) and streams the answer back, flushing as it goes, so that SSE
// streams pass through as they happen. Tests use it to put a recording or
// rewriting front in front of a real server.
func Forward(w http.ResponseWriter, r *http.Request, target string) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush() // a quiet GET stream still gets its headers
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}
