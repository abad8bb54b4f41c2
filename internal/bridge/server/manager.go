package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// Header names of the Streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderLastEventID     = "Last-Event-Id"
)

// KnownProtocolVersions are the MCP revisions whose MCP-Protocol-Version
// header the manager accepts; any other value is rejected with 400, as the
// transport specification asks.
var KnownProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// Handler serves one MCP session. ServeSession runs in its own goroutine and
// the session ends when it returns (or panics). ctx is cancelled when the
// session ends for another reason: DELETE, idle reaping, TerminateAll or the
// end of Run.
type Handler interface {
	ServeSession(ctx context.Context, c Conn) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c Conn) error

// ServeSession calls f.
func (f HandlerFunc) ServeSession(ctx context.Context, c Conn) error { return f(ctx, c) }

// Options configure a Manager. The zero value is a stateful manager that
// answers requests with SSE, keeps sessions until they are deleted and offers
// no resumption.
type Options struct {
	// Logger receives the manager's logs. Nil discards them.
	Logger *slog.Logger
	// Stateless runs a fresh handler for every POST and issues no session id.
	// GET and DELETE are then answered with 405.
	Stateless bool
	// IdleTimeout ends a session after this long without any HTTP request in
	// flight for it. Zero never reaps; negative values are rejected, and so is
	// any non-zero value in stateless mode (there are no sessions to reap).
	IdleTimeout time.Duration
	// JSONResponse answers requests with a single application/json body
	// instead of an SSE stream. Messages the handler relates to such a request
	// that are not its response go to the session's GET stream instead.
	JSONResponse bool
	// EventStore, when set, enables resumption: SSE events carry ids, every
	// new stream starts with a priming event (an id and empty data), and a GET
	// with Last-Event-ID replays a stream from that point. Ignored in
	// stateless mode. NewMemoryEventStore gives an in-memory store.
	EventStore EventStore
	// Retry is sent as the SSE retry field (in milliseconds) of the priming
	// event, telling clients how long to wait before resuming. Zero sends none.
	Retry time.Duration
}

// ErrSessionClosed is returned by Conn methods once the session has ended.
var ErrSessionClosed = errors.New("session closed")

const (
	stateNew = iota
	stateRunning
	stateStopped
)

// Manager is an http.Handler for one MCP endpoint. Create it with New, start
// it with Run, then route the endpoint's requests to it.
type Manager struct {
	h      Handler
	opts   Options
	logger *slog.Logger

	state   atomic.Int32
	runCtx  context.Context
	started chan struct{} // closed when Run starts; runCtx is set before

	mu       sync.Mutex
	sessions map[string]*session

	handlers sync.WaitGroup // running ServeSession goroutines
	live     atomic.Int64   // same count, readable by tests
}

// New checks opts and returns a Manager serving h.
func New(h Handler, opts Options) (*Manager, error) {
	if h == nil {
		return nil, errors.New("server: nil handler")
	}
	if opts.IdleTimeout < 0 {
		return nil, errors.New("server: idle timeout must be a positive duration (or zero to never reap)")
	}
	if opts.Stateless && opts.IdleTimeout != 0 {
		return nil, errors.New("server: idle timeout is not supported in stateless mode")
	}
	if opts.Retry < 0 {
		return nil, errors.New("server: retry must not be negative")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Stateless {
		opts.EventStore = nil
	}
	return &Manager{
		h:        h,
		opts:     opts,
		logger:   logger,
		started:  make(chan struct{}),
		sessions: make(map[string]*session),
	}, nil
}

// Run makes the manager serve until ctx is done, then ends every session and
// waits for their handlers to return. It can be called once per Manager;
// requests that arrive before Run get 500, and after it returned 503.
func (m *Manager) Run(ctx context.Context) error {
	if !m.state.CompareAndSwap(stateNew, stateRunning) {
		return errors.New("server: Manager.Run can only be called once per instance")
	}
	m.runCtx = ctx
	close(m.started)
	<-ctx.Done()
	m.state.Store(stateStopped)
	m.TerminateAll()
	m.handlers.Wait()
	return nil
}

// Ready is closed once Run has started, for callers that run it in a
// goroutine and must not serve requests before.
func (m *Manager) Ready() <-chan struct{} { return m.started }

// TerminateAll ends every session at once, as if the server had restarted:
// handlers are cancelled and later requests carrying the old session ids get
// 404. It is the fault-injection hook for the relay's "session expired" path.
func (m *Manager) TerminateAll() {
	m.mu.Lock()
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	for _, s := range all {
		s.close("terminated")
	}
}

// SessionCount reports how many sessions are live.
func (m *Manager) SessionCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

func (m *Manager) lookup(id string) *session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[id]
}

func (m *Manager) remove(s *session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
}

// ServeHTTP implements the Streamable HTTP transport for the endpoint.
func (m *Manager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-m.started:
	default:
		m.logger.Error("request before Run: the manager is not running", "method", r.Method)
		http.Error(w, "server not running", http.StatusInternalServerError)
		return
	}
	if m.state.Load() == stateStopped {
		http.Error(w, "server stopped", http.StatusServiceUnavailable)
		return
	}
	if v := r.Header.Get(HeaderProtocolVersion); v != "" && !knownVersion(v) {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Bad Request: unsupported protocol version "+v)
		return
	}
	switch r.Method {
	case http.MethodPost:
		m.servePOST(w, r)
	case http.MethodGet:
		if m.opts.Stateless {
			methodNotAllowed(w)
			return
		}
		m.serveGET(w, r)
	case http.MethodDelete:
		if m.opts.Stateless {
			methodNotAllowed(w)
			return
		}
		m.serveDELETE(w, r)
	default:
		methodNotAllowed(w)
	}
}

// sessionFor finds the session named by the request's header, answering 400
// or 404 itself when there is none.
func (m *Manager) sessionFor(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(HeaderSessionID)
	if id == "" {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Bad Request: missing "+HeaderSessionID+" header")
		return nil
	}
	s := m.lookup(id)
	if s == nil {
		m.logger.Info("rejected request with unknown or expired session id: "+id, "session", id, "method", r.Method)
		writeError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Session not found")
		return nil
	}
	return s
}

func (m *Manager) serveDELETE(w http.ResponseWriter, r *http.Request) {
	s := m.sessionFor(w, r)
	if s == nil {
		return
	}
	s.close("deleted by client")
	w.WriteHeader(http.StatusOK)
}

func knownVersion(v string) bool {
	for _, k := range KnownProtocolVersions {
		if k == v {
			return true
		}
	}
	return false
}

func methodNotAllowed(w http.ResponseWriter) {
	w.Header().Set("Allow", "GET, POST, DELETE")
	writeError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method not allowed")
}

// writeError answers with an HTTP error whose body is a JSON-RPC error without
// an id, which is what SDK clients expect to find.
func writeError(w http.ResponseWriter, status, code int, msg string) {
	body := jsonrpc.NewError(nil, code, msg, nil).Bytes()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}
