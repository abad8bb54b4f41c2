package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// reinitialize replaces an expired session (rule L9) without the client
// noticing: it replays the client's own initialize params and
// notifications/initialized, swallows the new initialize response (the client
// already has one) and restarts the GET stream. Requests that arrive meanwhile
// wait; the one that met the 404 is then resent by its caller, which is safe
// because the server never processed it.
//
// failedSID is the session the caller's request carried: if another request
// already replaced it, there is nothing to do.
func (r *Relay) reinitialize(ctx context.Context, failedSID string) error {
	r.reinitMu.Lock()
	defer r.reinitMu.Unlock()
	if cur := r.c.SessionID(); cur != failedSID {
		return nil // already replaced
	}
	r.mu.Lock()
	initMsg, inited := r.initMsg, r.inited
	gate := make(chan struct{})
	r.ready = gate
	stopGET := r.getStop
	r.getStop = nil
	r.mu.Unlock()
	defer close(gate)
	if stopGET != nil {
		stopGET()
	}
	if initMsg == nil {
		return errors.New("the client never sent initialize, so there is nothing to replay")
	}
	r.log.Warn("session expired on the server; re-initializing transparently", "old_session", shortID(failedSID))
	r.state("connecting")
	r.c.ResetSession()

	id := json.RawMessage(fmt.Sprintf(`"mcpbridge-reinit-%d"`, r.nextID.Add(1)))
	req := &jsonrpc.Message{JSONRPC: "2.0", ID: id, Method: "initialize", Params: initMsg.Params}
	if _, err := req.Encode(); err != nil {
		return err
	}
	ch := make(chan *jsonrpc.Message, 1)
	key := jsonrpc.IDKey(id)
	r.mu.Lock()
	r.internal[key] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.internal, key)
		r.mu.Unlock()
	}()
	if err := r.c.Post(ctx, req, r.deliver); err != nil {
		r.state("error")
		return fmt.Errorf("re-initializing: %w", err)
	}
	var resp *jsonrpc.Message
	select {
	case resp = <-ch:
	default:
		return errors.New("re-initializing: the server did not answer initialize")
	}
	if resp.Error != nil {
		r.state("error")
		return fmt.Errorf("re-initializing: server refused initialize: %s", resp.Error.Message)
	}
	if inited {
		note, _ := jsonrpc.NewNotification("notifications/initialized", nil)
		if err := r.c.Post(ctx, note, r.deliver); err != nil {
			return fmt.Errorf("re-initializing: sending notifications/initialized: %w", err)
		}
		select {
		case <-r.startListenLocked():
		case <-time.After(listenWait):
		case <-ctx.Done():
		}
	}
	r.log.Info("new session established after expiry", "session", shortID(r.c.SessionID()))
	r.state("connected")
	return nil
}

// startListen opens the GET stream for server-initiated messages (rule L6).
// It returns a channel closed once the first GET has been answered.
func (r *Relay) startListen() <-chan struct{} {
	r.reinitMu.Lock()
	defer r.reinitMu.Unlock()
	return r.startListenLocked()
}

// startListenLocked is startListen for callers holding reinitMu.
func (r *Relay) startListenLocked() <-chan struct{} {
	opened := make(chan struct{})
	if r.c.SessionID() == "" {
		// Without a session there is no stream to tie server messages to;
		// servers without sessions answer on POST streams only.
		close(opened)
		return opened
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.mu.Lock()
	if r.getStop != nil {
		r.getStop()
	}
	r.getStop = cancel
	r.mu.Unlock()
	sid := r.c.SessionID()
	r.goTracked(func() {
		defer cancel()
		err := r.c.listenSession(ctx, r.deliver, func() { close(opened) })
		if errors.Is(err, ErrSessionExpired) && ctx.Err() == nil {
			// The session died while idle: replace it now rather than
			// making the next request pay for it.
			if rerr := r.reinitialize(r.ctx, sid); rerr != nil {
				r.log.Warn("could not re-establish the session", "err", rerr)
				r.failed(rerr)
			}
		}
	})
	return opened
}

// toolName extracts params.name of a tools/call.
func toolName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	json.Unmarshal(params, &p)
	return p.Name
}

// filterTools removes disallowed tools from a tools/list result, keeping every
// other field of the result as it was.
func filterTools(result json.RawMessage, allowed func(string) bool) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(result, &fields); err != nil {
		return nil, err
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(fields["tools"], &tools); err != nil {
		return nil, err
	}
	kept := tools[:0]
	for _, t := range tools {
		if allowed(toolName(t)) {
			kept = append(kept, t)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	fields["tools"] = b
	return json.Marshal(fields)
}
