package server

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

func (m *Manager) servePOST(w http.ResponseWriter, r *http.Request) {
	acceptJSON, acceptSSE := accepts(r)
	if !acceptJSON || (!m.opts.JSONResponse && !acceptSSE) {
		writeError(w, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest,
			"Not Acceptable: client must accept both application/json and text/event-stream")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest,
			"Unsupported Media Type: Content-Type must be application/json")
		return
	}
	// A request for a session that is gone gets 404 whatever its body, so
	// that the client starts over instead of fixing the message.
	var s *session
	if !m.opts.Stateless && r.Header.Get(HeaderSessionID) != "" {
		if s = m.sessionFor(w, r); s == nil {
			return
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: reading body: "+err.Error())
		return
	}
	msg, err := jsonrpc.Parse(body)
	switch {
	case errors.Is(err, jsonrpc.ErrNotObject) && strings.HasPrefix(strings.TrimSpace(string(body)), "["):
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			"Invalid Request: batches are not supported since protocol revision 2025-06-18")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: "+err.Error())
		return
	}
	kind := msg.Kind()
	if kind == jsonrpc.KindInvalid {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC request, notification or response")
		return
	}
	if m.opts.Stateless {
		m.serveStateless(w, r, msg)
		return
	}

	if s == nil {
		if kind != jsonrpc.KindRequest || msg.Method != "initialize" {
			writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Bad Request: missing "+HeaderSessionID+" header")
			return
		}
		s = m.newSession(uuid.NewString())
		m.mu.Lock()
		m.sessions[s.id] = s
		m.mu.Unlock()
		m.logger.Info("session started", "session", s.id)
		defer s.startOnce()
	}
	s.begin()
	defer s.end()

	if kind != jsonrpc.KindRequest {
		if msg.Method == "notifications/cancelled" {
			s.cancelled(msg.Params)
		}
		if err := s.deliver(r.Context(), msg); err != nil {
			m.goneOrFailed(w, s, err)
			return
		}
		w.Header().Set(HeaderSessionID, s.id)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st, err := s.openStream(msg, m.opts.JSONResponse)
	if err != nil {
		m.goneOrFailed(w, s, err)
		return
	}
	// A new session's handler starts only now that the request's stream is
	// registered, so that even a handler that returns at once leaves the
	// request answered (with an error) rather than hanging.
	s.startOnce()
	if err := s.deliver(r.Context(), msg); err != nil && !errors.Is(err, ErrSessionClosed) {
		// The client went away before the handler took the request.
		st.detach(false)
		return
	}
	if st.json {
		st.serveJSON(w, r)
	} else {
		st.serveSSE(w, r, nil, true, 0)
	}
}

// serveStateless runs a fresh handler for one POST and leaves nothing behind:
// the handler's session is never registered and is ended, and its handler
// waited for, before the response completes.
func (m *Manager) serveStateless(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message) {
	if msg.Kind() != jsonrpc.KindRequest {
		// Without a session a notification or response has nobody to reach.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s := m.newSession("")
	st, err := s.openStream(msg, m.opts.JSONResponse)
	if err != nil {
		writeError(w, http.StatusInternalServerError, jsonrpc.CodeInternalError, err.Error())
		return
	}
	s.startOnce()
	defer func() {
		s.close("request done")
		<-s.exited
	}()
	if err := s.deliver(r.Context(), msg); err != nil && !errors.Is(err, ErrSessionClosed) {
		return
	}
	if st.json {
		st.serveJSON(w, r)
	} else {
		st.serveSSE(w, r, nil, true, 0)
	}
}

func (m *Manager) serveGET(w http.ResponseWriter, r *http.Request) {
	if _, sse := accepts(r); !sse {
		writeError(w, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "Not Acceptable: client must accept text/event-stream")
		return
	}
	s := m.sessionFor(w, r)
	if s == nil {
		return
	}
	s.begin()
	defer s.end()

	es := m.opts.EventStore
	last := r.Header.Get(HeaderLastEventID)
	if last != "" && es != nil {
		streamID, seq, ok := parseEventID(last)
		if !ok {
			writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Bad Request: malformed Last-Event-ID")
			return
		}
		s.mu.Lock()
		st := s.streams[streamID]
		switch {
		case s.closed:
			s.mu.Unlock()
			m.goneOrFailed(w, s, ErrSessionClosed)
			return
		case st == nil:
			// Fully delivered and forgotten, or never existed: nothing to replay.
			s.mu.Unlock()
			w.Header().Set(HeaderSessionID, s.id)
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			return
		case st.attached:
			s.mu.Unlock()
			writeError(w, http.StatusConflict, jsonrpc.CodeInvalidRequest, "Conflict: the stream is already being read")
			return
		}
		replay, err := es.After(s.id, streamID, seq)
		if err != nil {
			s.mu.Unlock()
			m.logger.Error("replaying events", "session", s.id, "stream", streamID, "err", err)
			writeError(w, http.StatusInternalServerError, jsonrpc.CodeInternalError, "replaying events failed")
			return
		}
		// Everything queued is in the store, so the replay covers it.
		st.queue = nil
		st.orphan = false
		st.closeAt = -1
		st.attached = true
		s.mu.Unlock()
		m.logger.Debug("resuming stream", "session", s.id, "stream", streamID, "after", seq, "replay", len(replay))
		st.serveSSE(w, r, replay, false, 0)
		return
	}

	s.mu.Lock()
	st := s.streams[getStreamID]
	if s.closed {
		s.mu.Unlock()
		m.goneOrFailed(w, s, ErrSessionClosed)
		return
	}
	if st.attached {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, jsonrpc.CodeInvalidRequest, "Conflict: only one GET stream is allowed per session")
		return
	}
	st.attached = true
	cursor := st.lastSeq
	if len(st.queue) > 0 {
		cursor = st.queue[0].Seq - 1
	}
	s.mu.Unlock()
	st.serveSSE(w, r, nil, true, cursor)
}

// goneOrFailed answers a request whose session ended meanwhile (404, as for
// an unknown session) or that failed otherwise (400).
func (m *Manager) goneOrFailed(w http.ResponseWriter, s *session, err error) {
	switch {
	case errors.Is(err, ErrSessionClosed):
		m.logger.Info("rejected request with unknown or expired session id: "+s.id, "session", s.id)
		writeError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Session not found")
	case errors.Is(err, errDuplicateID):
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
	default:
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, err.Error())
	}
}

// accepts reports whether the request's Accept header admits JSON and SSE
// bodies. Wildcards count.
func accepts(r *http.Request) (json, sse bool) {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "*/*":
				json, sse = true, true
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				sse = true
			}
		}
	}
	return json, sse
}
