package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/sse"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// streamState follows one SSE stream across reconnections: the cursor to
// resume from, the server's retry hint, and whether the awaited response came.
type streamState struct {
	want        string // id key of the awaited response; "" for the GET stream
	lastEventID string
	retry       time.Duration
	done        bool
	events      int // events received since the last (re)connection
	// idle, if positive, reopens the stream when it carries no bytes for
	// this long (the GET stream only: a request's stream may be quiet for as
	// long as the tool works).
	idle time.Duration
	// opened, if set, is called once the first GET has an answer (response
	// headers or an error), then cleared.
	opened func()
}

// readSSE reads events from body until the awaited response arrives, the
// stream ends, or ctx ends. Priming events (an id with empty data) only move
// the cursor (rule L5). A data payload that is not JSON is logged and skipped:
// one bad event must not lose the rest of the stream.
func (c *Client) readSSE(ctx context.Context, body io.ReadCloser, st *streamState, deliver Deliver) error {
	stop := context.AfterFunc(ctx, func() { body.Close() })
	defer stop()
	r := sse.NewReader(body, c.opts.MaxMessage)
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		st.events++
		if ev.HasID {
			st.lastEventID = ev.ID
		}
		if ev.HasRetry {
			st.retry = ev.Retry
		}
		msgs := c.eventMessages(ev)
		for _, m := range msgs {
			deliver(m)
			if st.want != "" && m.Kind() == jsonrpc.KindResponse && m.IDKey() == st.want {
				st.done = true
			}
		}
		if st.done {
			return nil
		}
	}
}

// resume reconnects a request's stream that ended before its response, with
// GET and Last-Event-ID, until the response arrives or resumption is
// impossible. Without an event id there is nothing to resume from: the
// request is reported lost rather than resent, because the server may have
// acted on it.
func (c *Client) resume(ctx context.Context, st *streamState, cause error, deliver Deliver) error {
	b := c.opts.Backoff.withDefaults()
	failures := 0
	for {
		if st.lastEventID == "" {
			if cause != nil {
				return fmt.Errorf("%w: %v", ErrStreamLost, cause)
			}
			return ErrStreamLost
		}
		if failures >= b.Attempts {
			return fmt.Errorf("%w: %d attempts to resume the stream failed (last: %v)", ErrStreamLost, failures, cause)
		}
		delay := b.Delay(failures, st.retry)
		c.log.Info("response stream ended early; resuming", "request", st.want, "last_event_id", st.lastEventID, "delay", delay)
		if err := sleep(ctx, delay); err != nil {
			return err
		}
		st.events = 0
		err := c.getStream(ctx, st, deliver)
		if st.done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var he *HTTPError
		if errors.As(err, &he) || errors.Is(err, ErrSessionExpired) {
			// The server refuses to resume (405, 404...): retrying will not help.
			return fmt.Errorf("%w: resuming failed: %v", ErrStreamLost, err)
		}
		if st.events > 0 && err == nil {
			failures = 0 // progress: the server closed a healthy stream (polling)
		} else {
			failures++
		}
		cause = err
	}
}

// getStream opens one GET SSE stream (resuming from st.lastEventID if set)
// and reads it until it ends or st is done.
func (c *Client) getStream(ctx context.Context, st *streamState, deliver Deliver) error {
	resp, sid, err := c.do(ctx, func() (*http.Request, string, error) {
		req, sid, err := c.newRequest(ctx, http.MethodGet, nil)
		if err == nil && st.lastEventID != "" {
			req.Header.Set(headerLastEventID, st.lastEventID)
		}
		return req, sid, err
	})
	if st.opened != nil {
		st.opened()
		st.opened = nil
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return c.statusError(resp, sid)
	}
	body := resp.Body
	if st.idle > 0 {
		ib := newIdleBody(body, st.idle)
		defer ib.stop()
		body = ib
	}
	return c.readSSE(ctx, body, st, deliver)
}

// errStreamIdle means a GET stream carried nothing, not even a keep-alive
// comment, for the idle timeout: the path to the server is presumed dead.
var errStreamIdle = errors.New("no data on the stream for too long; presumed dead")

// idleBody closes a response body that delivers no bytes for idle. TCP
// keep-alive finds a peer that is gone, but not a path that still
// acknowledges packets and forwards nothing (a hung middlebox or proxy, a
// NAT that lost us while a laptop slept behind another one).
type idleBody struct {
	io.ReadCloser
	idle  time.Duration
	timer *time.Timer
	fired atomic.Bool
}

func newIdleBody(rc io.ReadCloser, idle time.Duration) *idleBody {
	b := &idleBody{ReadCloser: rc, idle: idle}
	b.timer = time.AfterFunc(idle, func() {
		b.fired.Store(true)
		rc.Close()
	})
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && b.fired.Load() {
		err = errStreamIdle
	}
	return n, err
}

func (b *idleBody) stop() { b.timer.Stop() }

// maxRetryAfter caps how long a server's Retry-After may hold the GET stream.
const maxRetryAfter = 10 * time.Minute

// errGETUnsupported means the server offers no GET stream (405, rule L6).
var errGETUnsupported = errors.New("server offers no GET stream")

// Listen runs the GET stream for server-initiated messages until ctx ends,
// the server says it offers none (405), or the session is gone
// (ErrSessionExpired). Drops are resumed with Last-Event-ID after the server's
// retry delay or an exponential backoff with full jitter (rule L6); there is
// no attempt limit, since a laptop may be offline for hours.
//
// opened, if not nil, is called once the first GET has been answered (or has
// failed), so that a caller can hold other requests until the stream that
// may carry their messages exists.
func (c *Client) Listen(ctx context.Context, deliver Deliver, opened func()) error {
	st := &streamState{opened: opened, idle: c.opts.ListenIdleTimeout}
	if opened != nil {
		defer func() {
			if st.opened != nil {
				st.opened()
			}
		}()
	}
	b := c.opts.Backoff.withDefaults()
	failures := 0
	for {
		st.events = 0
		err := c.getStream(ctx, st, deliver)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var he *HTTPError
		switch {
		case errors.Is(err, ErrSessionExpired):
			return err
		case errors.As(err, &he) && he.Status == http.StatusMethodNotAllowed:
			c.log.Debug("server offers no GET stream (405)")
			return errGETUnsupported
		case err == nil && st.events > 0:
			failures = 0
		default:
			failures++
		}
		delay := b.Delay(failures, st.retry)
		if errors.As(err, &he) && he.RetryAfter > delay {
			// A rate-limited or overloaded server (429, 503) said when to
			// come back: reconnecting sooner only earns another refusal.
			delay = min(he.RetryAfter, maxRetryAfter)
		}
		if err != nil {
			c.log.Info("GET stream dropped; reconnecting", "err", err, "delay", delay, "last_event_id", st.lastEventID)
		} else {
			c.log.Debug("GET stream ended; reconnecting", "delay", delay)
		}
		if err := sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// eventMessages returns the JSON-RPC messages an SSE event carries: none for
// a priming event (empty data), an event of another type, or data that is not
// JSON-RPC, which is logged and skipped: one bad event must not lose the
// rest of the stream.
func (c *Client) eventMessages(ev *sse.Event) []*jsonrpc.Message {
	if len(ev.Data) == 0 {
		return nil
	}
	if ev.Type != "" && ev.Type != "message" {
		c.log.Debug("ignoring SSE event of unknown type", "type", ev.Type)
		return nil
	}
	msgs, err := parseMessages(ev.Data)
	if err != nil {
		c.log.Warn("server sent an SSE event that is not a JSON-RPC message; skipped", "err", err, "bytes", len(ev.Data))
		return nil
	}
	return msgs
}
