package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// Name and Version are reported as the demo's serverInfo.
const (
	Name    = "mcpbridge-demo"
	Version = "0.1.0"
)

// LatestProtocolVersion is what the demo answers to a client asking for a
// protocol version it does not know.
const LatestProtocolVersion = "2025-11-25"

var supportedVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// Handler is the demo server. The zero value is usable; it is safe for any
// number of sessions at once.
type Handler struct {
	// Logger receives the demo's logs. Nil discards them.
	Logger *slog.Logger
}

// New returns a demo handler that logs to logger (nil discards).
func New(logger *slog.Logger) *Handler { return &Handler{Logger: logger} }

func (h *Handler) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return h.Logger
}

// ServeSession implements server.Handler: it reads the session's messages and
// answers each request in its own goroutine, so a slow tool call never holds
// up a ping or the cancellation meant for it.
func (h *Handler) ServeSession(ctx context.Context, c server.Conn) error {
	ss := &session{
		h:        h,
		c:        c,
		log:      h.logger().With("session", c.SessionID()),
		inflight: make(map[string]context.CancelFunc),
		waiting:  make(map[string]chan *jsonrpc.Message),
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		msg, err := c.Recv(ctx)
		if err != nil {
			if errors.Is(err, server.ErrSessionClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch msg.Kind() {
		case jsonrpc.KindRequest:
			rctx, cancel := context.WithCancel(ctx)
			ss.track(msg.IDKey(), cancel)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer ss.untrack(msg.IDKey())
				defer cancel()
				ss.handleRequest(rctx, msg)
			}()
		case jsonrpc.KindNotification:
			ss.handleNotification(msg)
		case jsonrpc.KindResponse:
			ss.handleResponse(msg)
		}
	}
}

// session is the demo's state for one MCP session.
type session struct {
	h   *Handler
	c   server.Conn
	log *slog.Logger

	mu       sync.Mutex
	sampling bool                          // the client declared the sampling capability
	inflight map[string]context.CancelFunc // requests being served, by id key
	waiting  map[string]chan *jsonrpc.Message
	nextID   atomic.Int64
}

func (ss *session) track(key string, cancel context.CancelFunc) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.inflight[key] = cancel
}

func (ss *session) untrack(key string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.inflight, key)
}

func (ss *session) handleNotification(msg *jsonrpc.Message) {
	switch msg.Method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(msg.Params, &p) != nil {
			return
		}
		ss.mu.Lock()
		cancel := ss.inflight[jsonrpc.IDKey(p.RequestID)]
		ss.mu.Unlock()
		if cancel != nil {
			ss.log.Info("request cancelled by client", "id", string(p.RequestID), "reason", p.Reason)
			cancel()
		}
	case "notifications/initialized":
	default:
		ss.log.Debug("ignoring notification", "method", msg.Method)
	}
}

func (ss *session) handleResponse(msg *jsonrpc.Message) {
	key := msg.IDKey()
	ss.mu.Lock()
	ch := ss.waiting[key]
	delete(ss.waiting, key)
	ss.mu.Unlock()
	if ch == nil {
		ss.log.Warn("response to no request of ours", "id", key)
		return
	}
	ch <- msg
}

// request sends a request to the client on the stream of the request being
// served (related) and waits for the client's answer.
func (ss *session) request(ctx context.Context, related json.RawMessage, method string, params any) (*jsonrpc.Message, error) {
	id := json.RawMessage(strconv.Quote("demo-" + strconv.FormatInt(ss.nextID.Add(1), 10)))
	req, err := jsonrpc.NewRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Message, 1)
	key := jsonrpc.IDKey(id)
	ss.mu.Lock()
	ss.waiting[key] = ch
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.waiting, key)
		ss.mu.Unlock()
	}()
	if err := ss.c.Send(ctx, req, related); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (ss *session) handleRequest(ctx context.Context, msg *jsonrpc.Message) {
	result, rpcErr := ss.dispatch(ctx, msg)
	if ctx.Err() != nil {
		// Cancelled by the client, or the session ended: nobody wants an answer.
		return
	}
	var resp *jsonrpc.Message
	if rpcErr != nil {
		resp = jsonrpc.NewError(msg.ID, rpcErr.Code, rpcErr.Message, nil)
	} else {
		var err error
		if resp, err = jsonrpc.NewResult(msg.ID, result); err != nil {
			resp = jsonrpc.NewError(msg.ID, jsonrpc.CodeInternalError, err.Error(), nil)
		}
	}
	if err := ss.c.Send(context.WithoutCancel(ctx), resp, msg.ID); err != nil {
		ss.log.Debug("sending response", "method", msg.Method, "err", err)
	}
}

func (ss *session) dispatch(ctx context.Context, msg *jsonrpc.Message) (any, *jsonrpc.Error) {
	switch msg.Method {
	case "initialize":
		return ss.initialize(msg.Params)
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		return map[string]any{"tools": toolList()}, nil
	case "tools/call":
		return ss.callTool(ctx, msg)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + msg.Method}
}

func (ss *session) initialize(params json.RawMessage) (any, *jsonrpc.Error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Sampling json.RawMessage `json:"sampling"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Invalid params: %v", err)}
	}
	version := LatestProtocolVersion
	for _, v := range supportedVersions {
		if v == p.ProtocolVersion {
			version = v
		}
	}
	ss.mu.Lock()
	ss.sampling = len(p.Capabilities.Sampling) > 0 && string(p.Capabilities.Sampling) != "null"
	ss.mu.Unlock()
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
		"serverInfo":      map[string]any{"name": Name, "version": Version},
		"instructions":    "Demo server of mcpbridge: tools echo, add, slow, ask, big and drop.",
	}, nil
}
