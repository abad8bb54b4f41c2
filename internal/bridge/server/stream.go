package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// maxQueuedGET bounds the messages kept for a session's GET stream while no
// client is connected to it and there is no event store; the oldest go first.
const maxQueuedGET = 1024

// keepDelivered is how many fully delivered POST streams a session keeps in
// the event store for clients that lost the end of one.
const keepDelivered = 8

// stream is one logical SSE stream of a session: the response stream of one
// POSTed request, or the session's standalone GET stream. It outlives the HTTP
// response that carries it, so that with an event store a client can pick it
// up again with GET and Last-Event-ID.
//
// All fields are guarded by the session's mutex.
type stream struct {
	s    *session
	id   string
	json bool // answered with application/json rather than SSE

	pending  map[string]json.RawMessage // open requests (id key -> raw id)
	lastSeq  int                        // seq of the newest event
	queue    []Event                    // events not yet written to any response
	attached bool                       // an HTTP response is writing this stream
	closeAt  int                        // end the response after this seq; -1: no
	finished bool                       // no more events will come
	orphan   bool                       // nobody can read it any more: drop events
	retired  bool                       // delivered, kept for a late resume
	wake     chan struct{}
}

func newStream(s *session, id string, jsonMode bool) *stream {
	return &stream{
		s:       s,
		id:      id,
		json:    jsonMode,
		pending: make(map[string]json.RawMessage),
		closeAt: -1,
		wake:    make(chan struct{}, 1),
	}
}

func (st *stream) wakeLocked() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// store returns the event store when this stream's events are kept.
func (st *stream) store() EventStore {
	if st.json || st.s.id == "" {
		return nil
	}
	return st.s.m.opts.EventStore
}

func (st *stream) enqueueLocked(msg *jsonrpc.Message) {
	data := msg.Bytes()
	st.lastSeq++
	ev := Event{Seq: st.lastSeq, Data: data}
	if es := st.store(); es != nil {
		if err := es.Append(st.s.id, st.id, ev); err != nil {
			st.s.m.logger.Error("storing event", "session", st.s.id, "stream", st.id, "err", err)
		}
	}
	if st.orphan {
		st.s.m.logger.Debug("dropping message for a stream nobody reads", "session", st.s.id, "stream", st.id)
		return
	}
	st.queue = append(st.queue, ev)
	if st.id == getStreamID && st.store() == nil && len(st.queue) > maxQueuedGET {
		st.queue = st.queue[1:]
		st.s.m.logger.Warn("GET stream queue full, dropping oldest message", "session", st.s.id)
	}
	st.wakeLocked()
}

// eventID is the SSE id of an event: the stream and the position on it, so a
// Last-Event-ID alone names where to resume.
func eventID(streamID string, seq int) string { return streamID + "_" + strconv.Itoa(seq) }

func parseEventID(id string) (streamID string, seq int, ok bool) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.Atoi(id[i+1:])
	if err != nil || seq < 0 {
		return "", 0, false
	}
	return id[:i], seq, true
}

// serveSSE writes the stream as the body of one HTTP response until the
// stream is finished, the server closes it (CloseStream), the client goes away
// or the session ends. The caller has marked the stream attached; replay holds
// events to write first, and prime asks for a priming event.
func (st *stream) serveSSE(w http.ResponseWriter, r *http.Request, replay []Event, prime bool, cursor int) {
	s := st.s
	es := st.store()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	if s.id != "" {
		h.Set(HeaderSessionID, s.id)
	}
	w.WriteHeader(http.StatusOK)

	var buf bytes.Buffer
	if prime && es != nil {
		fmt.Fprintf(&buf, "id: %s\n", eventID(st.id, cursor))
		if ms := s.m.opts.Retry.Milliseconds(); ms > 0 {
			fmt.Fprintf(&buf, "retry: %d\n", ms)
		}
		buf.WriteString("data: \n\n")
	}
	writeEvents := func(evs []Event) {
		for _, ev := range evs {
			buf.WriteString("event: message\n")
			if es != nil {
				fmt.Fprintf(&buf, "id: %s\n", eventID(st.id, ev.Seq))
			}
			buf.WriteString("data: ")
			buf.Write(ev.Data)
			buf.WriteString("\n\n")
		}
	}
	writeEvents(replay)

	// The first pass flushes even without events: a client waits for the
	// response headers before it reads anything.
	for first := true; ; first = false {
		s.mu.Lock()
		n := len(st.queue)
		if st.closeAt >= 0 {
			n = 0
			for n < len(st.queue) && st.queue[n].Seq <= st.closeAt {
				n++
			}
		}
		batch := st.queue[:n:n]
		st.queue = st.queue[n:]
		stop, done := false, false
		if st.finished && len(st.queue) == 0 {
			stop, done = true, true
		} else if st.closeAt >= 0 {
			stop = true
		}
		if stop {
			st.closeAt = -1
		}
		s.mu.Unlock()

		writeEvents(batch)
		if buf.Len() > 0 || first {
			_, err := w.Write(buf.Bytes())
			buf.Reset()
			if err == nil {
				err = rc.Flush()
			}
			if err != nil {
				s.m.logger.Debug("SSE write failed", "session", s.id, "stream", st.id, "err", err)
				st.detach(false)
				return
			}
		}
		if stop {
			st.detach(done)
			return
		}
		select {
		case <-st.wake:
		case <-r.Context().Done():
			st.detach(false)
			return
		}
	}
}

// serveJSON waits for the request's response and writes it as the body.
func (st *stream) serveJSON(w http.ResponseWriter, r *http.Request) {
	s := st.s
	for {
		s.mu.Lock()
		finished := st.finished
		var resp []byte
		if len(st.queue) > 0 {
			resp = st.queue[0].Data
		}
		s.mu.Unlock()
		if finished {
			st.detach(true)
			if s.id != "" {
				w.Header().Set(HeaderSessionID, s.id)
			}
			if resp == nil {
				// Cancelled by the client: there is nothing to answer.
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.Write(resp)
			return
		}
		select {
		case <-st.wake:
		case <-r.Context().Done():
			st.detach(false)
			return
		}
	}
}

// detach records that no HTTP response carries the stream any more. A POST
// stream whose events all reached a response is forgotten; one that can no
// longer be resumed (no event store) drops what comes later.
func (st *stream) detach(done bool) {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st.attached = false
	if st.id == getStreamID {
		return
	}
	if done || st.store() == nil {
		st.orphan = true
		st.queue = nil
	}
	st.forgetIfDoneLocked()
}

// forgetIfDoneLocked drops a POST stream that will not be written any more:
// finished, and either fully delivered or unreadable.
//
// With an event store, a delivered stream is kept a little longer (the last
// keepDelivered of them per session): a write that succeeded may still have
// been lost with the connection, and the client will then resume it.
func (st *stream) forgetIfDoneLocked() {
	if st.id == getStreamID || !st.finished || st.attached || !st.orphan {
		return
	}
	s := st.s
	es := st.store()
	if es != nil && !st.retired {
		st.retired = true
		s.retired = append(s.retired, st.id)
		for len(s.retired) > keepDelivered {
			old := s.streams[s.retired[0]]
			s.retired = s.retired[1:]
			if old != nil && !old.attached {
				delete(s.streams, old.id)
				es.DeleteStream(s.id, old.id)
			}
		}
		return
	}
	delete(s.streams, st.id)
	if es != nil {
		es.DeleteStream(s.id, st.id)
	}
}
