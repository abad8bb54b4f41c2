package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// Header names of the Streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "MCP-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"
	acceptBoth            = "application/json, text/event-stream"
)

// DefaultMaxMessage caps one message from either side. A 50 MB tool result
// passes; a runaway stream cannot take all memory.
const DefaultMaxMessage = 64 << 20

// ClientOptions configures a Client.
type ClientOptions struct {
	// URL is the server's MCP endpoint. Required.
	URL string
	// HTTPClient sends every request. Nil means NewHTTPClient(TransportOptions{}).
	HTTPClient *http.Client
	// Header, if set, is called before every request for extra headers
	// (credentials resolved from the keyring or the environment at send time,
	// so a changed secret applies to the next request). Values are never logged.
	Header func(ctx context.Context) (http.Header, error)
	// Logger receives diagnostics. Nil discards them.
	Logger *slog.Logger
	// UserAgent is sent with every request. Default "mcpbridge".
	UserAgent string
	// MaxMessage caps one message from the server. Default DefaultMaxMessage.
	MaxMessage int
	// Backoff shapes reconnection of dropped streams. Zero value: defaults.
	Backoff Backoff
	// Auth, if set, supplies the Authorization header of every request and
	// is consulted when the server answers 401 or 403 (OAuth).
	Auth Authorizer
	// ListenIdleTimeout reopens the GET stream when it has carried nothing,
	// not even a keep-alive comment, for this long: the path is presumed dead
	// (TCP keep-alive cannot see a proxy or middlebox that acknowledges
	// packets but forwards nothing). TypeScript and Python SDK servers send a
	// comment every 15 s; servers that send none only get their quiet stream
	// reopened (resumed with Last-Event-ID) now and then. Request streams
	// have no such limit: a tool may work silently for as long as it needs.
	// Default DefaultListenIdleTimeout; negative disables it.
	ListenIdleTimeout time.Duration
}

// DefaultListenIdleTimeout is the default ClientOptions.ListenIdleTimeout:
// eight missed 15-second keep-alives.
const DefaultListenIdleTimeout = 2 * time.Minute

// Authorizer supplies and renews credentials, for OAuth. Its methods may be
// called concurrently.
type Authorizer interface {
	// Authorization returns the value of the Authorization header for the
	// next request, or "" for none.
	Authorization(ctx context.Context) (string, error)
	// Unauthorized is given a 401 or 403 response (body unread). It returns
	// nil once new credentials are in place and the request should be sent
	// again; the server did not process the refused request, so that is safe.
	Unauthorized(ctx context.Context, resp *http.Response) error
}

// maxAuthRetries bounds re-authorization for one request (rule A6).
const maxAuthRetries = 3

// do sends the request build makes. With an Authorizer, it sets the
// Authorization header and, when the Authorizer accepts a 401 or 403, sends a
// fresh copy of the request again.
func (c *Client) do(ctx context.Context, build func() (*http.Request, string, error)) (*http.Response, string, error) {
	for attempt := 0; ; attempt++ {
		req, sid, err := build()
		if err != nil {
			return nil, "", err
		}
		if c.opts.Auth != nil {
			v, err := c.opts.Auth.Authorization(ctx)
			if err != nil {
				return nil, "", fmt.Errorf("authorizing: %w", err)
			}
			if v != "" {
				req.Header.Set("Authorization", v)
			}
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, "", redactErr(err)
		}
		if c.opts.Auth == nil || attempt >= maxAuthRetries ||
			(resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			return resp, sid, nil
		}
		if aerr := c.opts.Auth.Unauthorized(ctx, resp); aerr != nil {
			// The server's answer stays the error the caller reports; the
			// authorizer's reason goes to the log.
			c.log.Warn("authorization failed", "status", resp.StatusCode, "err", aerr)
			return resp, sid, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
}

// Client is a Streamable HTTP client for one endpoint (stateful era,
// revisions 2025-03-26 to 2025-11-25). It holds the session id and the
// negotiated protocol version and is safe for concurrent use: every message is
// its own POST, so a slow tools/call never holds back a ping or a cancel.
type Client struct {
	opts ClientOptions
	hc   *http.Client
	log  *slog.Logger

	mu              sync.Mutex
	url             string
	sessionID       string
	protocolVersion string
	// legacy is the open 2024-11-05 HTTP+SSE session, if the server speaks
	// only that transport (rule L12); legacyServer remembers that it does
	// once the session is gone, so that the next message re-initializes.
	legacy       *legacySession
	legacyServer bool
	legacyN      int // names legacy sessions
}

// NewClient returns a Client. It sends nothing until the first message.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.URL == "" {
		return nil, errors.New("bridge: no server URL")
	}
	hc := opts.HTTPClient
	if hc == nil {
		var err error
		if hc, err = NewHTTPClient(TransportOptions{}); err != nil {
			return nil, err
		}
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "mcpbridge"
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.ListenIdleTimeout == 0 {
		opts.ListenIdleTimeout = DefaultListenIdleTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{opts: opts, hc: hc, log: log, url: opts.URL}, nil
}

// URL returns the endpoint URL.
func (c *Client) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.url
}

// SetURL points the client at another endpoint and forgets the session, which
// belonged to the old one.
func (c *Client) SetURL(url string) {
	c.dropLegacy()
	c.mu.Lock()
	c.url, c.sessionID, c.protocolVersion = url, "", ""
	c.legacyServer = false
	c.mu.Unlock()
}

// SessionID returns the current session id ("" before initialize or for a
// server without sessions). A 2024-11-05 HTTP+SSE session has no id on the
// wire; for it, SessionID returns a local name that changes with every
// session.
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.legacy != nil {
		return c.legacy.id
	}
	return c.sessionID
}

// ProtocolVersion returns the negotiated protocol version, if any.
func (c *Client) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.protocolVersion
}

// ResetSession forgets the session, before a new initialize. A 2024-11-05
// session's stream is closed.
func (c *Client) ResetSession() {
	c.dropLegacy()
	c.mu.Lock()
	c.sessionID, c.protocolVersion = "", ""
	c.mu.Unlock()
}

// shortID shows enough of a session id to correlate logs without handing the
// whole id (a capability on some servers) to a log file.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

// newRequest builds a request with the transport headers. It returns the
// session id the request carries, so that a 404 can be tied to that session.
func (c *Client) newRequest(ctx context.Context, method string, body []byte) (*http.Request, string, error) {
	return c.newRequestTo(ctx, method, c.URL(), body)
}

// newRequestTo is newRequest for another URL of the same origin.
func (c *Client) newRequestTo(ctx context.Context, method, target string, body []byte) (*http.Request, string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, "", err
	}
	if c.opts.Header != nil {
		extra, err := c.opts.Header(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("preparing credentials: %w", err)
		}
		for k, vs := range extra {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	switch method {
	case http.MethodPost:
		req.Header.Set("Accept", acceptBoth)
		req.Header.Set("Content-Type", "application/json")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	c.mu.Lock()
	sid, pv := c.sessionID, c.protocolVersion
	c.mu.Unlock()
	if sid != "" {
		req.Header.Set(headerSessionID, sid)
	}
	if pv != "" {
		req.Header.Set(headerProtocolVersion, pv)
	}
	return req, sid, nil
}

// Deliver receives every message the server sends, on any stream.
type Deliver func(*jsonrpc.Message)

// Post sends one message. For a request, it reads the response (JSON or SSE),
// hands every message on the stream to deliver, and returns once the response
// to msg has been delivered; a stream that drops first is resumed with GET and
// Last-Event-ID (rules L5, L8). For a notification or response it returns once
// the server accepted it (202).
//
// Errors: ErrSessionExpired (wrapped) when the session is gone and nothing was
// processed; ErrStreamLost when the response can no longer arrive; *HTTPError
// for other statuses; transport errors otherwise. If ctx is cancelled (the
// response came on another stream, or the client cancelled) Post returns
// ctx.Err().
//
// An initialize refused with 400, 404 or 405 falls back to the 2024-11-05
// HTTP+SSE transport if the server offers it (rule L12; legacy.go). Post
// then works the same, except that every server message arrives on the
// session's one stream: responses go to the deliver of the Post that awaits
// them, everything else to the deliver of the Post that opened the session.
// When that stream ends, requests awaiting a response fail with
// ErrStreamLost and later messages with ErrSessionExpired.
func (c *Client) Post(ctx context.Context, msg *jsonrpc.Message, deliver Deliver) error {
	isRequest := msg.Kind() == jsonrpc.KindRequest
	isInit := isRequest && msg.Method == "initialize"
	if isInit {
		c.dropLegacy() // a new initialize starts afresh, as below
	} else if ls, gone := c.legacyState(); ls != nil {
		return c.postLegacy(ctx, ls, msg, deliver)
	} else if gone {
		return fmt.Errorf("%w: the 2024-11-05 HTTP+SSE session ended", ErrSessionExpired)
	}
	resp, sid, err := c.do(ctx, func() (*http.Request, string, error) {
		req, sid, err := c.newRequest(ctx, http.MethodPost, msg.Bytes())
		if err == nil && isInit {
			// initialize opens a session: it never carries an old one (a
			// client that initializes twice starts afresh).
			req.Header.Del(headerSessionID)
			req.Header.Del(headerProtocolVersion)
			sid = ""
		}
		return req, sid, err
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 300 {
		err := c.statusError(resp, sid)
		if isInit && fallbackStatus(resp.StatusCode) && c.SessionID() == "" {
			resp.Body.Close()
			return c.fallback(ctx, msg, deliver, err)
		}
		return err
	}
	if isInit {
		if id := resp.Header.Get(headerSessionID); id != "" {
			c.mu.Lock()
			c.sessionID = id
			c.mu.Unlock()
			c.log.Info("session established", "session", shortID(id))
		}
	}
	if !isRequest {
		// 202 Accepted (or any 2xx) for notifications and responses; drain
		// whatever body came so the connection can be reused.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	if resp.StatusCode == http.StatusAccepted {
		return fmt.Errorf("server answered 202 Accepted to a request, with no response")
	}
	wrapped := deliver
	if isInit {
		wrapped = func(m *jsonrpc.Message) {
			if m.Kind() == jsonrpc.KindResponse && m.IDKey() == msg.IDKey() && m.Result != nil {
				c.captureProtocolVersion(m.Result)
			}
			deliver(m)
		}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		return c.readJSON(resp.Body, msg, wrapped)
	case "text/event-stream":
		st := &streamState{want: msg.IDKey()}
		err := c.readSSE(ctx, resp.Body, st, wrapped)
		if st.done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.resume(ctx, st, err, wrapped)
	default:
		return fmt.Errorf("server answered with unexpected content type %q (want application/json or text/event-stream)", resp.Header.Get("Content-Type"))
	}
}

func (c *Client) captureProtocolVersion(result json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r) == nil && r.ProtocolVersion != "" {
		c.mu.Lock()
		c.protocolVersion = r.ProtocolVersion
		c.mu.Unlock()
		c.log.Info("protocol version negotiated", "version", r.ProtocolVersion)
	}
}

// statusError turns a non-2xx response into an error, recognising an expired
// session.
func (c *Client) statusError(resp *http.Response, sid string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	he := &HTTPError{Status: resp.StatusCode, header: resp.Header}
	if m, err := jsonrpc.Parse(body); err == nil && m.Error != nil {
		he.RPC = m.Error
	} else {
		he.Body = summarizeBody(body, resp.Header.Get("Content-Type"))
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(ra); err == nil {
			he.RetryAfter = time.Duration(s) * time.Second
		} else if t, err := http.ParseTime(ra); err == nil {
			he.RetryAfter = time.Until(t)
		}
	}
	if sid != "" && sessionGone(he) {
		return fmt.Errorf("%w: %w", ErrSessionExpired, he)
	}
	return he
}

// sessionGone recognises "your session is unknown": 404 per the spec, and
// the 400 "no valid session" some servers send instead.
func sessionGone(he *HTTPError) bool {
	if he.Status == http.StatusNotFound {
		return true
	}
	if he.Status != http.StatusBadRequest {
		return false
	}
	text := strings.ToLower(he.Body)
	if he.RPC != nil {
		text = strings.ToLower(he.RPC.Message)
	}
	return strings.Contains(text, "session")
}

// summarizeBody keeps an error body readable: an HTML page from a proxy is
// reduced to its title, anything else to a short single-line prefix.
func summarizeBody(body []byte, contentType string) string {
	s := string(body)
	if strings.Contains(contentType, "html") || strings.HasPrefix(strings.TrimSpace(strings.ToLower(s)), "<") {
		lower := strings.ToLower(s)
		if i := strings.Index(lower, "<title>"); i >= 0 {
			if j := strings.Index(lower[i:], "</title>"); j > 0 {
				return "(HTML page) " + strings.TrimSpace(s[i+7:i+j])
			}
		}
		return "(an HTML page, not an MCP response: a proxy or gateway may be in the way)"
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// readJSON handles an application/json response: one message, or a batch
// (2025-03-26 servers may send arrays, rule L13).
func (c *Client) readJSON(body io.Reader, req *jsonrpc.Message, deliver Deliver) error {
	data, err := io.ReadAll(io.LimitReader(body, int64(c.opts.MaxMessage)+1))
	if err != nil {
		return fmt.Errorf("reading response: %w", err)
	}
	if len(data) > c.opts.MaxMessage {
		return fmt.Errorf("response larger than %d bytes", c.opts.MaxMessage)
	}
	msgs, err := parseMessages(data)
	if err != nil {
		return fmt.Errorf("server sent an invalid JSON response: %w", err)
	}
	got := false
	for _, m := range msgs {
		if m.Kind() == jsonrpc.KindResponse && m.IDKey() == req.IDKey() {
			got = true
		}
		deliver(m)
	}
	if !got {
		return fmt.Errorf("server's JSON response did not answer request %s", req.IDKey())
	}
	return nil
}

// parseMessages parses one message or a batch array. It takes ownership of
// data.
func parseMessages(data []byte) ([]*jsonrpc.Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, err
		}
		out := make([]*jsonrpc.Message, 0, len(raws))
		for _, r := range raws {
			m, err := jsonrpc.Parse(r)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	// data is a fresh buffer (a response body or an SSE event) that nothing
	// else reads: the message may keep it rather than a copy.
	m, err := jsonrpc.ParseOwned(data)
	if err != nil {
		return nil, err
	}
	return []*jsonrpc.Message{m}, nil
}

// Terminate ends the session with DELETE (rule L9). 405 means the server does
// not allow it, which is fine. It is best effort and bounded by ctx. A
// 2024-11-05 session has no DELETE: its stream is closed instead.
func (c *Client) Terminate(ctx context.Context) error {
	if ls, _ := c.legacyState(); ls != nil {
		c.terminateLegacy(ctx)
		return nil
	}
	if c.SessionID() == "" {
		return nil
	}
	resp, sid, err := c.do(ctx, func() (*http.Request, string, error) {
		return c.newRequest(ctx, http.MethodDelete, nil)
	})
	if err != nil {
		return fmt.Errorf("ending session: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		c.log.Info("session ended", "session", shortID(sid))
	case resp.StatusCode == http.StatusMethodNotAllowed:
		c.log.Debug("server does not allow ending sessions (405)")
	default:
		c.log.Warn("ending session failed", "status", resp.StatusCode)
	}
	return nil
}
