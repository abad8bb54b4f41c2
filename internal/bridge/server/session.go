package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// Conn is a handler's view of one session.
//
// Recv, Send and CloseStream may be called concurrently from any number of
// goroutines. After the session ended they return ErrSessionClosed.
type Conn interface {
	// Recv returns the next message the client POSTed: requests,
	// notifications and responses to requests the handler sent.
	Recv(ctx context.Context) (*jsonrpc.Message, error)
	// Send delivers msg to the client. A response goes on the stream of the
	// request it answers. A request or notification with a relatedRequestID
	// goes on that request's stream while the request is open (in JSON
	// response mode, and once the request was answered, on the GET stream);
	// with a nil relatedRequestID it goes on the session's GET stream, queued
	// until the client opens one. Responses to requests the client cancelled
	// are dropped.
	Send(ctx context.Context, msg *jsonrpc.Message, relatedRequestID json.RawMessage) error
	// SessionID is the Mcp-Session-Id of the session ("" in stateless mode).
	SessionID() string
	// CloseStream ends the HTTP response carrying the request's SSE stream
	// once the events sent so far are written, without answering the request:
	// the server-side "polling" close of the 2025-11-25 transport. Later
	// messages for the request are kept and delivered when the client resumes
	// with GET and Last-Event-ID. It needs an EventStore and SSE responses.
	CloseStream(relatedRequestID json.RawMessage) error
}

// getStreamID names the session's standalone GET stream; POST streams are
// numbered from 1.
const getStreamID = "0"

// session is one MCP session and the Conn its handler uses.
type session struct {
	id     string
	m      *Manager
	ctx    context.Context
	cancel context.CancelFunc

	incoming chan *jsonrpc.Message
	done     chan struct{} // closed by close
	exited   chan struct{} // closed when the handler has returned

	mu         sync.Mutex
	closed     bool
	nextStream int
	streams    map[string]*stream // by stream id
	requests   map[string]*stream // open requests, by id key
	retired    []string           // delivered streams still kept, oldest first
	active     int                // HTTP requests in flight
	idleTimer  *time.Timer
	idleGen    int
	closeOnce  sync.Once
	started    sync.Once
}

// startOnce starts the handler the first time it is called.
func (s *session) startOnce() { s.started.Do(s.start) }

func (m *Manager) newSession(id string) *session {
	ctx, cancel := context.WithCancel(m.runCtx)
	s := &session{
		id:       id,
		m:        m,
		ctx:      ctx,
		cancel:   cancel,
		incoming: make(chan *jsonrpc.Message, 16),
		done:     make(chan struct{}),
		exited:   make(chan struct{}),
		streams:  make(map[string]*stream),
		requests: make(map[string]*stream),
	}
	s.streams[getStreamID] = newStream(s, getStreamID, false)
	return s
}

// start runs the handler. A handler that returns or panics ends the session;
// the session is forgotten before done is closed, so a client that saw its
// request answered because the session ended also sees SessionCount drop.
func (s *session) start() {
	m := s.m
	m.handlers.Add(1)
	m.live.Add(1)
	go func() {
		// exited closes last, so that whoever waits on it sees the
		// handler fully accounted for.
		defer close(s.exited)
		defer m.handlers.Done()
		defer m.live.Add(-1)
		reason := "handler returned"
		defer func() {
			if p := recover(); p != nil {
				m.logger.Error("session handler panicked", "session", s.id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				reason = "handler panicked"
			}
			s.close(reason)
		}()
		if err := m.h.ServeSession(s.ctx, s); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrSessionClosed) {
			m.logger.Error("session handler failed", "session", s.id, "err", err)
			reason = "handler failed"
		}
	}()
}

// close ends the session once: it is forgotten, the handler is cancelled,
// every open request is answered with an error and every stream is ended.
func (s *session) close(reason string) {
	s.closeOnce.Do(func() {
		s.m.remove(s)
		s.mu.Lock()
		s.closed = true
		if s.idleTimer != nil {
			s.idleTimer.Stop()
		}
		for key, st := range s.requests {
			id := st.pending[key]
			st.enqueueLocked(jsonrpc.NewError(id, jsonrpc.CodeInternalError, "session ended: "+reason, nil))
			delete(st.pending, key)
			delete(s.requests, key)
		}
		for _, st := range s.streams {
			st.finished = true
			st.wakeLocked()
		}
		s.mu.Unlock()
		if st := s.m.opts.EventStore; st != nil && s.id != "" {
			st.DeleteSession(s.id)
		}
		// done closes before the context is cancelled, so that a handler
		// woken by either sees ErrSessionClosed from Recv.
		close(s.done)
		s.cancel()
		if s.id != "" {
			s.m.logger.Info("session ended", "session", s.id, "reason", reason)
		}
	})
}

// begin and end bracket every HTTP request of the session, so that idle
// reaping only counts time with nothing in flight.
func (s *session) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active++
	s.idleGen++
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
}

func (s *session) end() {
	timeout := s.m.opts.IdleTimeout
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active > 0 || timeout <= 0 || s.closed {
		return
	}
	s.idleGen++
	gen := s.idleGen
	s.idleTimer = time.AfterFunc(timeout, func() {
		s.mu.Lock()
		idle := s.active == 0 && s.idleGen == gen
		s.mu.Unlock()
		if idle {
			s.close("idle timeout")
		}
	})
}

// deliver hands a POSTed message to the handler.
func (s *session) deliver(ctx context.Context, msg *jsonrpc.Message) error {
	select {
	case s.incoming <- msg:
		return nil
	case <-s.done:
		return ErrSessionClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *session) Recv(ctx context.Context) (*jsonrpc.Message, error) {
	select {
	case msg := <-s.incoming:
		return msg, nil
	case <-s.done:
		return nil, ErrSessionClosed
	case <-ctx.Done():
		// The session's own context ends with the session: say so.
		select {
		case <-s.done:
			return nil, ErrSessionClosed
		default:
		}
		return nil, ctx.Err()
	}
}

func (s *session) SessionID() string { return s.id }

func (s *session) Send(ctx context.Context, msg *jsonrpc.Message, related json.RawMessage) error {
	if msg == nil {
		return errors.New("server: nil message")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	if msg.Kind() == jsonrpc.KindResponse || (msg.Method == "" && len(msg.ID) > 0) {
		key := jsonrpc.IDKey(msg.ID)
		st := s.requests[key]
		if st == nil {
			// Cancelled by the client, or answered twice: nobody waits for it.
			s.m.logger.Debug("dropping response to a request that is not open", "session", s.id, "id", key)
			return nil
		}
		delete(s.requests, key)
		delete(st.pending, key)
		st.enqueueLocked(msg)
		if len(st.pending) == 0 {
			st.finished = true
			st.wakeLocked()
			st.forgetIfDoneLocked()
		}
		return nil
	}
	st := s.streams[getStreamID]
	if len(related) > 0 {
		if rs := s.requests[jsonrpc.IDKey(related)]; rs != nil && !rs.json {
			st = rs
		}
	}
	if st.id == getStreamID && s.id == "" {
		// Stateless: there is no GET stream to fall back on.
		return errors.New("server: no stream to send on in stateless mode")
	}
	st.enqueueLocked(msg)
	return nil
}

func (s *session) CloseStream(related json.RawMessage) error {
	if s.m.opts.EventStore == nil {
		return errors.New("server: CloseStream needs an event store")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	st := s.requests[jsonrpc.IDKey(related)]
	if st == nil {
		return fmt.Errorf("server: request %s is not open", related)
	}
	if st.json {
		return errors.New("server: CloseStream needs an SSE response")
	}
	if st.attached {
		st.closeAt = st.lastSeq
		st.wakeLocked()
	}
	return nil
}

// cancelled forgets a request the client cancelled, so that its stream can
// end without the response the handler will not send.
func (s *session) cancelled(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	key := jsonrpc.IDKey(p.RequestID)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.requests[key]
	if st == nil {
		return
	}
	delete(s.requests, key)
	delete(st.pending, key)
	if len(st.pending) == 0 {
		st.finished = true
		st.wakeLocked()
		st.forgetIfDoneLocked()
	}
}

// openStream registers a POST stream for the request msg, or reports that the
// session is gone or the id is already in use.
func (s *session) openStream(msg *jsonrpc.Message, jsonMode bool) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSessionClosed
	}
	key := msg.IDKey()
	if s.requests[key] != nil {
		return nil, errDuplicateID
	}
	s.nextStream++
	st := newStream(s, strconv.Itoa(s.nextStream), jsonMode)
	st.attached = true // the POST that opens it writes it
	st.pending[key] = msg.ID
	s.streams[st.id] = st
	s.requests[key] = st
	return st, nil
}

var errDuplicateID = errors.New("a request with this id is already in flight")
