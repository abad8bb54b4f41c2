package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/stdio"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// listenWait caps how long requests after notifications/initialized wait for
// the GET stream to be answered.
const listenWait = 2 * time.Second

// Observer hears what a relay does, for status reporting. Methods are called
// from many goroutines and must not block.
type Observer interface {
	// State is "connecting", "connected", "error" or "closed".
	State(state string, sessionID bool)
	// Relayed counts one message relayed from the client to the server.
	Relayed(method string)
	// Failed records an error reported to the client.
	Failed(err error)
}

// RelayOptions configures a Relay.
type RelayOptions struct {
	// Client talks to the server. Required.
	Client *Client
	// Logger receives diagnostics (never stdout). Nil discards them.
	Logger *slog.Logger
	// Observer, if set, is told about state changes and traffic.
	Observer Observer
	// ToolAllowed, if set, filters tools: a tool it refuses is left out of
	// tools/list results and calls to it are answered with an error without
	// reaching the server.
	ToolAllowed func(name string) bool
	// MaxMessage caps one line from the client. Default DefaultMaxMessage.
	MaxMessage int
	// ShutdownGrace is how long in-flight requests may finish after stdin
	// closes or a signal arrives. Default 1 s.
	ShutdownGrace time.Duration
	// DeleteTimeout bounds the DELETE that ends the session. Default 2 s.
	DeleteTimeout time.Duration
	// Retry shapes resending requests that never reached the server
	// (connection refused). Default: 3 attempts from 250 ms.
	Retry Backoff
}

// Relay connects a desktop client on stdio to a Client. Every message from
// the client is handled concurrently; every request gets exactly one response
// on stdout (the server's, or a JSON-RPC error saying what went wrong).
type Relay struct {
	opts RelayOptions
	c    *Client
	log  *slog.Logger
	out  *stdio.Writer
	obs  Observer

	ctx    context.Context // the relay's life; cancelled at shutdown
	wg     sync.WaitGroup  // every goroutine the relay starts
	inWG   sync.WaitGroup  // in-flight client messages (for the grace period)
	nextID atomic.Int64    // ids of the bridge's own requests

	mu       sync.Mutex
	pending  map[string]*pending // client requests awaiting a response, by id key
	internal map[string]chan *jsonrpc.Message
	initMsg  *jsonrpc.Message // the client's initialize, replayed on session expiry
	inited   bool             // the client sent notifications/initialized
	ready    chan struct{}    // closed while the session is usable; open during re-initialization
	getStop  context.CancelFunc

	reinitMu sync.Mutex // one re-initialization at a time

	outDead chan struct{} // closed when stdout fails
	outOnce sync.Once

	stopped  chan struct{} // closed by Stop
	stopOnce sync.Once
	stopErr  error
}

type pending struct {
	id     []byte
	batch  *batchReply // the client's batch this request came in, if any
	method string
	cancel context.CancelFunc
}

// NewRelay returns a Relay.
func NewRelay(opts RelayOptions) (*Relay, error) {
	if opts.Client == nil {
		return nil, errors.New("bridge: relay needs a client")
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = time.Second
	}
	if opts.DeleteTimeout <= 0 {
		opts.DeleteTimeout = 2 * time.Second
	}
	if opts.Retry.Initial <= 0 {
		opts.Retry.Initial = 250 * time.Millisecond
	}
	if opts.Retry.Max <= 0 {
		opts.Retry.Max = 2 * time.Second
	}
	if opts.Retry.Attempts <= 0 {
		opts.Retry.Attempts = 3
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ready := make(chan struct{})
	close(ready)
	return &Relay{
		opts:     opts,
		c:        opts.Client,
		log:      log,
		obs:      opts.Observer,
		pending:  map[string]*pending{},
		internal: map[string]chan *jsonrpc.Message{},
		ready:    ready,
		outDead:  make(chan struct{}),
		stopped:  make(chan struct{}),
	}, nil
}

// Run relays between in/out and the server until in reaches EOF or ctx ends
// (a signal). It then lets in-flight requests finish for the grace period,
// ends the session with DELETE and returns nil. It returns an error only if
// stdout can no longer be written.
func (r *Relay) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	r.out = stdio.NewWriter(out)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.ctx = runCtx
	defer cancel()
	r.state("connecting")

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		// The reader goroutine is not in wg: a blocked stdin read cannot be
		// interrupted portably, and the process exits after Run anyway.
		rd := stdio.NewReader(in, r.opts.MaxMessage)
		for {
			line, err := rd.ReadLine()
			if errors.Is(err, stdio.ErrLineTooLong) {
				r.log.Warn("message from the client too large; refused", "err", err)
				r.write(jsonrpc.NewError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message too large: the bridge accepts at most %d bytes per message", r.opts.MaxMessage), nil))
				continue
			}
			if err != nil {
				readErr <- err
				return
			}
			select {
			case lines <- line:
			case <-runCtx.Done():
				return
			}
		}
	}()

	var writeErr error
loop:
	for {
		select {
		case line := <-lines:
			r.handleLine(line)
		case err := <-readErr:
			if !errors.Is(err, io.EOF) {
				r.log.Warn("reading stdin failed", "err", err)
			} else {
				r.log.Info("stdin closed; shutting down")
			}
			break loop
		case <-ctx.Done():
			r.log.Info("signal received; shutting down")
			break loop
		case <-r.outFailed():
			writeErr = errors.New("stdout closed")
			break loop
		case <-r.stopped:
			writeErr = r.stopErr
			r.failPending(r.stopErr)
			break loop
		}
	}
	r.shutdown(cancel)
	return writeErr
}

// Stop ends the relay because it cannot go on (its endpoint was removed):
// every pending request is answered with err, the session is ended, and Run
// returns err.
func (r *Relay) Stop(err error) {
	r.stopOnce.Do(func() {
		r.stopErr = err
		close(r.stopped)
	})
}

// failPending answers every pending request with err.
func (r *Relay) failPending(err error) {
	r.mu.Lock()
	ps := r.pending
	r.pending = map[string]*pending{}
	r.mu.Unlock()
	for _, p := range ps {
		r.respond(p.batch, jsonrpc.NewError(p.id, jsonrpc.CodeInternalError, err.Error(), nil))
		p.cancel()
	}
}

// Retarget moves the relay to another URL: the old session is ended (best
// effort) and, if the client had initialized, a new one is opened by
// replaying its initialize, as after a session expiry.
func (r *Relay) Retarget(ctx context.Context, url string) error {
	r.reinitMu.Lock()
	r.mu.Lock()
	if r.getStop != nil {
		r.getStop()
		r.getStop = nil
	}
	hadInit := r.initMsg != nil
	r.mu.Unlock()
	dctx, stop := context.WithTimeout(ctx, r.opts.DeleteTimeout)
	r.c.Terminate(dctx)
	stop()
	r.c.SetURL(url)
	r.reinitMu.Unlock()
	if !hadInit {
		return nil
	}
	return r.reinitialize(ctx, "")
}

func (r *Relay) outFailed() <-chan struct{} { return r.outDead }

// outErr records that stdout is gone: the client has left, so the relay ends.
func (r *Relay) outErr(err error) {
	r.outOnce.Do(func() {
		r.log.Warn("writing to stdout failed; the client is gone", "err", err)
		close(r.outDead)
	})
}

// shutdown gives in-flight requests a short grace period, stops every stream
// and ends the session (rule S3).
func (r *Relay) shutdown(cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { r.inWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(r.opts.ShutdownGrace):
		r.log.Info("shutting down with requests still in flight")
	}
	cancel()
	r.wg.Wait()
	ctx, stop := context.WithTimeout(context.Background(), r.opts.DeleteTimeout)
	defer stop()
	if err := r.c.Terminate(ctx); err != nil {
		r.log.Warn("could not end the session", "err", err)
	}
	r.state("closed")
}

func (r *Relay) state(s string) {
	if r.obs != nil {
		r.obs.State(s, r.c.SessionID() != "")
	}
}

func (r *Relay) failed(err error) {
	if r.obs != nil {
		r.obs.Failed(err)
	}
}

// go runs f as a tracked goroutine.
func (r *Relay) goTracked(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// handleLine classifies one line from the client and starts its relay.
func (r *Relay) handleLine(line []byte) {
	msg, err := jsonrpc.Parse(line)
	if err != nil {
		switch {
		case errors.Is(err, jsonrpc.ErrNotObject) && len(bytes.TrimLeft(line, " \t\r")) > 0 && bytes.TrimLeft(line, " \t\r")[0] == '[':
			r.handleBatch(line)
			return
		case errors.Is(err, jsonrpc.ErrNotObject):
			r.write(jsonrpc.NewError(nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message must be a JSON object", nil))
		default:
			r.write(jsonrpc.NewError(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON", nil))
		}
		r.log.Warn("bad line from the client", "err", err, "bytes", len(line))
		return
	}
	switch msg.Kind() {
	case jsonrpc.KindRequest:
		r.startRequest(msg, nil)
	case jsonrpc.KindNotification:
		r.startNotification(msg)
	case jsonrpc.KindResponse:
		r.startResponse(msg)
	default:
		id := msg.ID
		if string(id) == "null" {
			id = nil
		}
		r.write(jsonrpc.NewError(id, jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 request, notification or response", nil))
	}
}

// startResponse relays the client's answer to a server request.
func (r *Relay) startResponse(msg *jsonrpc.Message) {
	r.inWG.Add(1)
	r.goTracked(func() {
		defer r.inWG.Done()
		r.forward(msg)
	})
}

// startRequest relays one request; its response goes to stdout, or into b
// when the request came in a batch.
func (r *Relay) startRequest(msg *jsonrpc.Message, b *batchReply) {
	key := msg.IDKey()
	if msg.Method == "tools/call" && r.opts.ToolAllowed != nil {
		if name := toolName(msg.Params); !r.opts.ToolAllowed(name) {
			r.respond(b, jsonrpc.NewError(msg.ID, jsonrpc.CodeInvalidParams, fmt.Sprintf("tool %q is not available through this endpoint (filtered by the bridge's configuration)", name), nil))
			return
		}
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.mu.Lock()
	if _, dup := r.pending[key]; dup {
		r.mu.Unlock()
		cancel()
		r.respond(b, jsonrpc.NewError(msg.ID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("duplicate request id %s: a request with this id is still in flight", key), nil))
		return
	}
	r.pending[key] = &pending{id: msg.ID, method: msg.Method, cancel: cancel, batch: b}
	var gate chan struct{}
	if msg.Method == "initialize" {
		r.initMsg = msg
		r.inited = false
		// Until initialize is answered there is no session to send anything
		// in: a client that does not wait (rule L11) has its next messages
		// held here instead of refused by the server for a missing session.
		gate = make(chan struct{})
		r.ready = gate
	}
	r.mu.Unlock()
	if r.obs != nil {
		r.obs.Relayed(msg.Method)
	}
	r.inWG.Add(1)
	r.goTracked(func() {
		defer r.inWG.Done()
		defer cancel()
		if gate != nil {
			defer close(gate)
		}
		r.relayRequest(ctx, msg)
	})
}

func (r *Relay) startNotification(msg *jsonrpc.Message) {
	if msg.Method == "notifications/cancelled" {
		r.cancelRequest(msg)
	}
	if r.obs != nil {
		r.obs.Relayed(msg.Method)
	}
	var gate, prevReady chan struct{}
	if msg.Method == "notifications/initialized" {
		// Messages after initialized must not overtake it (rule L11): the
		// server may only then finish setting up the session (some servers
		// register tools at that point). Hold them until it is accepted.
		gate = make(chan struct{})
		r.mu.Lock()
		prev := r.ready // closed once a pending initialize is answered
		r.ready = gate
		r.mu.Unlock()
		prevReady = prev
	}
	r.inWG.Add(1)
	r.goTracked(func() {
		defer r.inWG.Done()
		if prevReady != nil {
			select {
			case <-prevReady:
			case <-r.ctx.Done():
			}
		}
		err := r.forward(msg)
		if gate == nil {
			return
		}
		if err == nil {
			r.mu.Lock()
			r.inited = true
			r.mu.Unlock()
			// Open the GET stream before letting later requests go: a
			// server may hand their messages to the first stream that
			// exists, and the client must be listening by then. A server
			// slow to answer the GET does not hold requests for long.
			opened := r.startListen()
			select {
			case <-opened:
			case <-time.After(listenWait):
			case <-r.ctx.Done():
			}
		}
		close(gate)
	})
}

// cancelRequest handles the client's notifications/cancelled: the request's
// stream is closed once the notification is on its way, and a late response
// is dropped (rule C1). initialize is never cancelled.
func (r *Relay) cancelRequest(msg *jsonrpc.Message) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	key := jsonrpc.IDKey(p.RequestID)
	r.mu.Lock()
	pr := r.pending[key]
	if pr != nil && pr.method != "initialize" {
		delete(r.pending, key)
	} else {
		pr = nil
	}
	r.mu.Unlock()
	if pr != nil {
		r.log.Debug("client cancelled a request", "id", key)
		// Give the notification a moment to be sent first, on its own POST.
		time.AfterFunc(100*time.Millisecond, pr.cancel)
	}
}

// relayRequest sends one client request and makes sure exactly one response
// reaches the client.
func (r *Relay) relayRequest(ctx context.Context, msg *jsonrpc.Message) {
	err := r.send(ctx, msg)
	if err == nil || ctx.Err() != nil {
		// Delivered (by this stream or another), or cancelled by the client.
		return
	}
	r.log.Warn("request failed", "method", msg.Method, "id", msg.IDKey(), "err", err)
	r.failed(err)
	r.complete(jsonrpc.NewError(msg.ID, errorCode(err), describe(err, r.c.URL()), nil))
	if msg.Method == "initialize" {
		r.state("error")
	}
}

// forward sends a notification or response (no reply expected).
func (r *Relay) forward(msg *jsonrpc.Message) error {
	err := r.send(r.ctx, msg)
	if err != nil && r.ctx.Err() == nil {
		r.log.Warn("could not deliver a message to the server", "method", msg.Method, "err", err)
		r.failed(err)
	}
	return err
}

// send POSTs msg, waiting out a re-initialization in progress, re-initializing
// when the session has expired, and resending when the request provably
// never reached the server. Anything else is returned: a request the server
// may have received is never resent blindly.
func (r *Relay) send(ctx context.Context, msg *jsonrpc.Message) error {
	reinits, retries := 0, 0
	for {
		if msg.Method != "initialize" && msg.Method != "notifications/initialized" {
			if err := r.waitReady(ctx); err != nil {
				return err
			}
		}
		sid := r.c.SessionID()
		err := r.c.Post(ctx, msg, r.deliver)
		switch {
		case err == nil:
			if msg.Method == "initialize" {
				r.state("connected")
			}
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrSessionExpired) && msg.Method != "initialize" && reinits < 2:
			reinits++
			if rerr := r.reinitialize(ctx, sid); rerr != nil {
				return fmt.Errorf("the session expired and could not be re-established: %w", rerr)
			}
			continue
		case neverSent(err) && retries < r.opts.Retry.Attempts-1:
			d := r.opts.Retry.Delay(retries, 0)
			retries++
			r.log.Info("server unreachable; retrying a message it never received", "method", msg.Method, "err", err, "delay", d)
			if serr := sleep(ctx, d); serr != nil {
				return serr
			}
			continue
		}
		return err
	}
}

func (r *Relay) waitReady(ctx context.Context) error {
	r.mu.Lock()
	ready := r.ready
	r.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deliver routes one message from the server: responses to the request that
// awaits them (or to the bridge's own re-initialization), everything else to
// the client as it came.
func (r *Relay) deliver(m *jsonrpc.Message) {
	if m.Kind() != jsonrpc.KindResponse {
		r.write(m)
		return
	}
	key := m.IDKey()
	r.mu.Lock()
	if ch, ok := r.internal[key]; ok {
		delete(r.internal, key)
		r.mu.Unlock()
		ch <- m
		return
	}
	r.mu.Unlock()
	r.complete(m)
}

// complete writes the one response for a pending request and forgets it. A
// response for an id that is not pending (a duplicate, or one the client
// cancelled) is dropped.
func (r *Relay) complete(m *jsonrpc.Message) {
	key := m.IDKey()
	r.mu.Lock()
	p := r.pending[key]
	delete(r.pending, key)
	r.mu.Unlock()
	if p == nil {
		r.log.Debug("dropping a response nobody waits for", "id", key)
		return
	}
	if p.method == "tools/list" && r.opts.ToolAllowed != nil && m.Result != nil {
		if filtered, err := filterTools(m.Result, r.opts.ToolAllowed); err == nil {
			m = &jsonrpc.Message{JSONRPC: "2.0", ID: m.ID, Result: filtered}
			m.Encode()
		}
	}
	r.respond(p.batch, m)
	p.cancel() // stops reading a stream that another stream already answered
}

func (r *Relay) write(m *jsonrpc.Message) {
	if err := r.out.Write(m.Bytes()); err != nil {
		r.outErr(err)
	}
}
