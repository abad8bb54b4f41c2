package server

import "sync"

// Event is one SSE event as kept by an EventStore: its position on its stream
// (1, 2, ...) and its data (one encoded JSON-RPC message).
type Event struct {
	Seq  int
	Data []byte
}

// EventStore keeps the events sent on SSE streams so that a client whose
// stream broke (or was closed by the server) can resume it with a GET carrying
// Last-Event-ID. Streams are identified by the session id and a stream id that
// is unique within the session. The manager calls every method with its own
// lock for that stream held, so implementations need only be safe for calls on
// different streams at once.
type EventStore interface {
	// Append records ev as the next event of the stream.
	Append(sessionID, streamID string, ev Event) error
	// After returns the events of the stream whose Seq is greater than seq, in
	// order. An unknown stream has no events.
	After(sessionID, streamID string, seq int) ([]Event, error)
	// DeleteStream forgets a stream once every event of it was delivered.
	DeleteStream(sessionID, streamID string)
	// DeleteSession forgets every stream of a session that ended.
	DeleteSession(sessionID string)
}

// NewMemoryEventStore returns an EventStore that keeps events in memory until
// their stream or session is deleted. It does not cap memory: a stream lives
// no longer than its request or session.
func NewMemoryEventStore() EventStore {
	return &memoryStore{sessions: make(map[string]map[string][]Event)}
}

type memoryStore struct {
	mu       sync.Mutex
	sessions map[string]map[string][]Event
}

func (s *memoryStore) Append(sessionID, streamID string, ev Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	streams := s.sessions[sessionID]
	if streams == nil {
		streams = make(map[string][]Event)
		s.sessions[sessionID] = streams
	}
	streams[streamID] = append(streams[streamID], ev)
	return nil
}

func (s *memoryStore) After(sessionID, streamID string, seq int) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, ev := range s.sessions[sessionID][streamID] {
		if ev.Seq > seq {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (s *memoryStore) DeleteStream(sessionID, streamID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if streams := s.sessions[sessionID]; streams != nil {
		delete(streams, streamID)
		if len(streams) == 0 {
			delete(s.sessions, sessionID)
		}
	}
}

func (s *memoryStore) DeleteSession(sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionID)
}

// streamCount reports how many streams the store holds (for tests).
func (s *memoryStore) streamCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, streams := range s.sessions {
		n += len(streams)
	}
	return n
}
