package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// message is any JSON-RPC 2.0 message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("JSON-RPC error %d: %s (data %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

// bridgeConn is a running mcpbridge and the JSON-RPC session over its stdio.
// call and notify may be called concurrently; one goroutine reads stdout.
type bridgeConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	logf   func(string, ...any)
	verb   bool
	handle func(method string, params json.RawMessage) (any, *rpcError) // server->client requests

	writeMu sync.Mutex

	mu       sync.Mutex
	nextID   int
	pending  map[string]chan *message
	protoErr error // first protocol violation seen on stdout

	readDone chan struct{} // closed when stdout hits EOF
	exited   chan struct{} // closed when the process has exited
	waitErr  error
}

func startBridge(cfg *config, logf func(string, ...any), handle func(string, json.RawMessage) (any, *rpcError)) (*bridgeConn, error) {
	args := append([]string{"--url", cfg.url, "--allow-http"}, cfg.bridgeArgs...)
	cmd := exec.Command(cfg.bridge, args...)
	cmd.Stderr = &prefixWriter{prefix: "mcpbridge: ", w: os.Stderr}
	cmd.Env = browserEnviron()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logf("starting %s %q", cfg.bridge, args)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the bridge: %w", err)
	}
	c := &bridgeConn{
		cmd:      cmd,
		stdin:    stdin,
		logf:     logf,
		verb:     cfg.verbose,
		handle:   handle,
		nextID:   1,
		pending:  map[string]chan *message{},
		readDone: make(chan struct{}),
		exited:   make(chan struct{}),
	}
	go c.readLoop(stdout)
	go func() {
		<-c.readDone
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func (c *bridgeConn) violation(format string, a ...any) {
	err := fmt.Errorf(format, a...)
	c.logf("protocol violation: %v", err)
	c.mu.Lock()
	if c.protoErr == nil {
		c.protoErr = err
	}
	c.mu.Unlock()
}

// readLoop reads the bridge's stdout: every line must be one JSON-RPC
// message (stdout is protocol-only).
func (c *bridgeConn) readLoop(r io.Reader) {
	defer close(c.readDone)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			c.dispatch(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.logf("reading the bridge's stdout: %v", err)
			}
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
	}
}

func (c *bridgeConn) dispatch(line []byte) {
	if c.verb {
		c.logf("<- %s", bytes.TrimSpace(line))
	}
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '[' {
		c.violation("batch on stdout (not allowed since 2025-06-18): %.200s", t)
		return
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		c.violation("stdout line is not a JSON-RPC message (%v): %.200q", err, line)
		return
	}
	if m.JSONRPC != "2.0" {
		c.violation(`message without "jsonrpc":"2.0": %.200s`, line)
	}
	switch {
	case m.Method != "" && len(m.ID) > 0: // request from the server
		go c.answer(&m)
	case m.Method != "": // notification
		if !c.verb {
			if m.Method == "notifications/progress" {
				c.logf("notification %s %s", m.Method, m.Params)
			} else {
				c.logf("notification %s", m.Method)
			}
		}
	case len(m.ID) > 0: // response to us
		key := idKey(m.ID)
		c.mu.Lock()
		ch, ok := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if !ok {
			c.violation("response for unknown or answered id %s", m.ID)
			return
		}
		ch <- &m
	default:
		c.violation("message is neither request, notification nor response: %.200s", line)
	}
}

func (c *bridgeConn) answer(req *message) {
	c.logf("server request %s (id %s)", req.Method, req.ID)
	result, rerr := c.handle(req.Method, req.Params)
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if rerr != nil {
		resp["error"] = rerr
	} else {
		resp["result"] = result
	}
	if err := c.write(resp); err != nil {
		c.logf("answering %s: %v", req.Method, err)
	}
}

func (c *bridgeConn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if c.verb {
		c.logf("-> %s", b)
	}
	b = append(b, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.stdin.Write(b)
	return err
}

// call sends a request and waits for its response.
func (c *bridgeConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	ch := make(chan *message, 1)
	key := strconv.Itoa(id)
	c.pending[key] = ch
	c.mu.Unlock()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if err := c.write(req); err != nil {
		return nil, fmt.Errorf("%s: writing to the bridge: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the bridge closed stdout before answering", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, m.Error)
		}
		if m.Result == nil {
			return nil, fmt.Errorf("%s: response has neither result nor error", method)
		}
		return m.Result, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
		// Tell the bridge, as a client would.
		_ = c.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "confdriver timed out"})
		return nil, fmt.Errorf("%s: no response: %w", method, ctx.Err())
	}
}

func (c *bridgeConn) notify(method string, params any) error {
	n := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		n["params"] = params
	}
	return c.write(n)
}

// shutdown closes stdin as a desktop client does and waits for the bridge to
// exit: up to grace for stdin EOF, then SIGTERM, then SIGKILL. It reports an
// error when the bridge needed a signal or exited non-zero.
func (c *bridgeConn) shutdown(grace time.Duration) error {
	c.writeMu.Lock()
	c.stdin.Close()
	c.writeMu.Unlock()
	select {
	case <-c.exited:
		if c.waitErr != nil {
			return fmt.Errorf("the bridge exited with %v after stdin EOF", c.waitErr)
		}
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.exited:
		return fmt.Errorf("the bridge did not exit within %v of stdin EOF (it did after SIGTERM: %v)", grace, c.waitErr)
	case <-time.After(3 * time.Second):
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.exited
	return fmt.Errorf("the bridge exited neither on stdin EOF nor on SIGTERM; killed")
}

// kill stops the bridge at once (after a failure).
func (c *bridgeConn) kill() {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
	}
}

func (c *bridgeConn) protocolError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.protoErr
}

// idKey normalises a JSON id for matching (our ids are integers).
func idKey(raw json.RawMessage) string {
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&n); err == nil {
		return n.String()
	}
	return string(bytes.TrimSpace(raw))
}

// prefixWriter prefixes each line written to w.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	midLn  bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, ch := range b {
		if !p.midLn {
			out = append(out, p.prefix...)
			p.midLn = true
		}
		out = append(out, ch)
		if ch == '\n' {
			p.midLn = false
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
