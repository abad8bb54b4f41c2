package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/sse"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// This file is the fallback to the 2024-11-05 HTTP+SSE transport (rule L12).
// A server of that era refuses a POSTed initialize (400, 404 or 405) but
// answers a GET of the same URL with an SSE stream whose first event,
// `endpoint`, names where to POST messages. That one stream then carries
// every server message for the life of the session; it cannot be resumed, so
// when it ends the session is gone.

// legacyEndpointWait bounds how long the fallback GET may take to produce its
// endpoint event: a Streamable HTTP server that merely keeps a GET open must
// not hold the client's initialize for ever.
const legacyEndpointWait = 10 * time.Second

// legacySession is one open 2024-11-05 session: the endpoint messages are
// POSTed to and the GET stream that brings the server's messages.
type legacySession struct {
	id       string // local name for the session (the transport has no session ids)
	endpoint string // where messages go; same origin as the URL
	deliver  Deliver
	cancel   context.CancelFunc // closes the stream
	done     chan struct{}      // closed once the stream has ended
	err      error              // why it ended; written before done is closed

	mu      sync.Mutex
	waiters map[string]*legacyWaiter // requests awaiting a response, by id key
}

// legacyWaiter is a request whose response will come on the stream.
type legacyWaiter struct {
	deliver Deliver       // the deliver of the Post that sent the request
	taken   chan struct{} // closed once the response is in, before delivering it
	got     chan struct{} // closed once the response has been delivered
	init    bool
}

// legacyState returns the open legacy session, if any, and whether the URL is
// known to speak the old transport while no session is open.
func (c *Client) legacyState() (*legacySession, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legacy, c.legacy == nil && c.legacyServer && c.sessionID == ""
}

// dropLegacy closes the legacy session, if any, without waiting for its
// stream to end. It returns the session so that a caller may wait.
func (c *Client) dropLegacy() *legacySession {
	c.mu.Lock()
	ls := c.legacy
	c.legacy = nil
	c.mu.Unlock()
	if ls != nil {
		ls.cancel()
	}
	return ls
}

// fallbackStatus reports whether an initialize refused with status may come
// from a 2024-11-05 server (rule L12).
func fallbackStatus(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// fallback tries the 2024-11-05 transport after the server refused the
// initialize msg with cause. If the URL answers a GET with an endpoint event,
// the stream stays open as the session's and msg is sent again to the
// endpoint; otherwise cause is returned.
func (c *Client) fallback(ctx context.Context, msg *jsonrpc.Message, deliver Deliver, cause error) error {
	base, err := url.Parse(c.URL())
	if err != nil {
		return cause
	}
	// The stream outlives the initialize request that opens it; until the
	// endpoint is known it is bounded by that request and by a deadline.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopCtx := context.AfterFunc(ctx, cancel)
	deadline := time.AfterFunc(legacyEndpointWait, cancel)
	endpoint, resp, rd, err := c.openLegacy(sctx, base)
	stoppedCtx, stoppedDeadline := stopCtx(), deadline.Stop()
	if err == nil && (!stoppedCtx || !stoppedDeadline) {
		err = errors.New("no endpoint event in time")
	}
	if err != nil {
		cancel()
		if resp != nil {
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var refused *legacyOriginError
		if errors.As(err, &refused) {
			c.log.Warn("refusing the server's 2024-11-05 SSE endpoint", "err", err)
			return err
		}
		c.log.Debug("server does not offer the 2024-11-05 HTTP+SSE transport either", "err", err)
		return cause
	}

	ls := &legacySession{
		endpoint: endpoint,
		deliver:  deliver,
		cancel:   cancel,
		done:     make(chan struct{}),
		waiters:  map[string]*legacyWaiter{},
	}
	c.mu.Lock()
	old := c.legacy
	c.legacyN++
	ls.id = fmt.Sprintf("legacy-sse-%d", c.legacyN)
	c.legacy, c.legacyServer = ls, true
	c.mu.Unlock()
	if old != nil {
		old.cancel()
	}
	c.log.Info("server speaks the 2024-11-05 HTTP+SSE transport; using it", "endpoint", RedactURL(endpoint))
	go c.readLegacy(sctx, ls, resp.Body, rd)

	err = c.postLegacy(ctx, ls, msg, deliver)
	if err != nil {
		// A session the server never initialized is of no use.
		c.mu.Lock()
		if c.legacy == ls {
			c.legacy = nil
		}
		c.mu.Unlock()
		ls.cancel()
	}
	return err
}

// legacyOriginError refuses an endpoint event naming another origin: the
// bridge would send the client's messages and credentials there.
type legacyOriginError struct{ origin string }

func (e *legacyOriginError) Error() string {
	return fmt.Sprintf("the server offers the 2024-11-05 HTTP+SSE transport but names an endpoint on another origin (%s); the bridge refuses to send messages there", e.origin)
}

// openLegacy GETs base and reads the first event, which must be an endpoint
// event naming a same-origin URI. It returns that URI resolved, the response
// and the reader positioned after the event.
func (c *Client) openLegacy(ctx context.Context, base *url.URL) (string, *http.Response, *sse.Reader, error) {
	resp, _, err := c.do(ctx, func() (*http.Request, string, error) {
		return c.newLegacyRequest(ctx, http.MethodGet, base.String(), nil)
	})
	if err != nil {
		return "", nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp, nil, fmt.Errorf("GET answered HTTP %d", resp.StatusCode)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		return "", resp, nil, fmt.Errorf("GET answered with content type %q", ct)
	}
	rd := sse.NewReader(resp.Body, c.opts.MaxMessage)
	ev, err := rd.Next()
	if err != nil {
		return "", resp, nil, fmt.Errorf("reading the first event: %w", err)
	}
	if ev.Type != "endpoint" {
		return "", resp, nil, fmt.Errorf("first event is %q, not endpoint", ev.Type)
	}
	ep, err := base.Parse(strings.TrimSpace(string(ev.Data)))
	if err != nil {
		return "", resp, nil, fmt.Errorf("endpoint event is not a URI: %w", err)
	}
	if !sameOrigin(base, ep) {
		return "", resp, nil, &legacyOriginError{origin: origin(ep)}
	}
	return ep.String(), resp, rd, nil
}

// sameOrigin compares scheme, host and port, with default ports filled in.
func sameOrigin(a, b *url.URL) bool {
	return origin(a) == origin(b)
}

// newLegacyRequest builds a request to target with the configured headers.
// The old transport has no session or protocol version headers.
func (c *Client) newLegacyRequest(ctx context.Context, method, target string, body []byte) (*http.Request, string, error) {
	req, _, err := c.newRequestTo(ctx, method, target, body)
	if err != nil {
		return nil, "", err
	}
	req.Header.Del(headerSessionID)
	req.Header.Del(headerProtocolVersion)
	return req, "", nil
}

// readLegacy reads the session's stream until it ends, handing responses to
// the requests that await them and everything else to the session's deliver.
func (c *Client) readLegacy(ctx context.Context, ls *legacySession, body io.ReadCloser, rd *sse.Reader) {
	stop := context.AfterFunc(ctx, func() { body.Close() })
	defer func() {
		stop()
		body.Close()
		close(ls.done)
	}()
	for {
		ev, err := rd.Next()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				ls.err = errors.New("the session was closed")
			case errors.Is(err, io.EOF):
				ls.err = errors.New("the server closed its event stream")
			default:
				ls.err = redactErr(err)
			}
			if ctx.Err() == nil {
				c.log.Warn("the 2024-11-05 SSE stream ended; the session is gone", "err", ls.err)
			}
			return
		}
		msgs := c.eventMessages(ev)
		for _, m := range msgs {
			c.dispatchLegacy(ls, m)
		}
	}
}

func (c *Client) dispatchLegacy(ls *legacySession, m *jsonrpc.Message) {
	if m.Kind() != jsonrpc.KindResponse {
		ls.deliver(m)
		return
	}
	key := m.IDKey()
	ls.mu.Lock()
	w := ls.waiters[key]
	delete(ls.waiters, key)
	ls.mu.Unlock()
	if w == nil {
		ls.deliver(m)
		return
	}
	if w.init && m.Result != nil {
		c.captureProtocolVersion(m.Result)
	}
	close(w.taken)
	w.deliver(m)
	close(w.got)
}

// postLegacy sends msg to the session's endpoint. For a request it then waits
// for the response on the stream, as Post does on a Streamable HTTP server.
func (c *Client) postLegacy(ctx context.Context, ls *legacySession, msg *jsonrpc.Message, deliver Deliver) error {
	select {
	case <-ls.done:
		return fmt.Errorf("%w: %v (the 2024-11-05 transport cannot resume a stream)", ErrSessionExpired, ls.err)
	default:
	}
	var w *legacyWaiter
	if msg.Kind() == jsonrpc.KindRequest {
		// Registered before sending: the response may overtake the 202.
		key := msg.IDKey()
		w = &legacyWaiter{deliver: deliver, taken: make(chan struct{}), got: make(chan struct{}), init: msg.Method == "initialize"}
		ls.mu.Lock()
		ls.waiters[key] = w
		ls.mu.Unlock()
		defer func() {
			ls.mu.Lock()
			if ls.waiters[key] == w {
				delete(ls.waiters, key)
			}
			ls.mu.Unlock()
		}()
	}
	// answered reports whether the response came; it may come while the
	// POST is still under way, and whoever receives it may cancel ctx (the
	// relay does). Post still returns only once it has been delivered.
	answered := func() bool {
		if w == nil {
			return false
		}
		select {
		case <-w.taken:
			<-w.got
			return true
		default:
			return false
		}
	}
	resp, _, err := c.do(ctx, func() (*http.Request, string, error) {
		return c.newLegacyRequest(ctx, http.MethodPost, ls.endpoint, msg.Bytes())
	})
	if err != nil {
		if answered() {
			return nil // the response overtook the 202
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		// A 404 (or a 400 naming the session) means the server no longer
		// knows the endpoint and did not process the message.
		return c.statusError(resp, ls.id)
	}
	// 202 or 200; whatever the body says, the answer comes on the stream.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if w == nil {
		return nil
	}
	select {
	case <-w.got:
		return nil
	case <-ctx.Done():
		if answered() {
			return nil
		}
		return ctx.Err()
	case <-ls.done:
		if answered() {
			return nil
		}
		return fmt.Errorf("%w: %v (the 2024-11-05 transport cannot resume it)", ErrStreamLost, ls.err)
	}
}

// listenSession is Listen, except for a 2024-11-05 session, whose one stream
// already carries server-initiated messages: a GET of the URL would open
// another session. Then it only waits until ctx ends or the stream does (the
// next message re-initializes).
func (c *Client) listenSession(ctx context.Context, deliver Deliver, opened func()) error {
	ls, _ := c.legacyState()
	if ls == nil {
		return c.Listen(ctx, deliver, opened)
	}
	if opened != nil {
		opened()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ls.done:
		return nil
	}
}

// terminateLegacy ends a legacy session: the transport has no DELETE, so
// closing the stream is all there is.
func (c *Client) terminateLegacy(ctx context.Context) {
	ls := c.dropLegacy()
	if ls == nil {
		return
	}
	select {
	case <-ls.done:
		c.log.Info("session ended (2024-11-05 stream closed)", "session", ls.id)
	case <-ctx.Done():
	}
}
