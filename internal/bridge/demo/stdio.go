package demo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/bridge/stdio"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// ServeStdio runs one session of h over newline-delimited JSON-RPC on in and
// out (the MCP stdio transport), with no HTTP and no bridge in between. It is
// the floor that the bridge's latency is measured against (`mcpbridge serve
// --stdio`).
//
// A line that is not JSON is answered with a parse error and the session goes
// on. When in reaches EOF, Recv reports ErrSessionClosed, so the handler
// finishes the requests it is serving and returns; ServeStdio returns when
// the handler has. When ctx ends the handler is cancelled. The error is the
// handler's, or the one that stopped reading in (never io.EOF).
func ServeStdio(ctx context.Context, h server.Handler, in io.Reader, out io.Writer) error {
	if h == nil {
		return errors.New("demo: nil handler")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &stdioConn{
		out:      stdio.NewWriter(out),
		incoming: make(chan *jsonrpc.Message),
		eof:      make(chan struct{}),
		done:     make(chan struct{}),
	}
	go c.readLoop(in)
	err := h.ServeSession(ctx, c)
	close(c.done)
	if errors.Is(err, server.ErrSessionClosed) || errors.Is(err, context.Canceled) {
		err = nil
	}
	if err == nil {
		if rerr := c.readError(); rerr != nil {
			err = rerr
		}
	}
	return err
}

// stdioConn is a server.Conn on a pair of streams. There is a single stream
// in each direction, so the related request id of Send does not matter and a
// request's stream cannot be closed on its own.
type stdioConn struct {
	out      *stdio.Writer
	incoming chan *jsonrpc.Message
	eof      chan struct{} // closed when in ended
	done     chan struct{} // closed when the session is over

	mu      sync.Mutex
	readErr error
}

// readLoop feeds Recv. It is not waited for: a blocked read of in cannot be
// interrupted, and ends when in is closed.
func (c *stdioConn) readLoop(in io.Reader) {
	defer close(c.eof)
	rd := stdio.NewReader(in, 0)
	for {
		line, err := rd.ReadLine()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
			}
			return
		}
		msg, err := jsonrpc.Parse(line)
		if err != nil {
			code, text := jsonrpc.CodeParseError, "parse error: the line is not valid JSON"
			if errors.Is(err, jsonrpc.ErrNotObject) {
				code, text = jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message must be a JSON object"
			}
			c.write(jsonrpc.NewError(nil, code, text, nil))
			continue
		}
		select {
		case c.incoming <- msg:
		case <-c.done:
			return
		}
	}
}

func (c *stdioConn) readError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

func (c *stdioConn) write(m *jsonrpc.Message) error {
	b := m.Bytes()
	if b == nil {
		return errors.New("demo: message cannot be encoded")
	}
	return c.out.Write(b)
}

// Recv returns the next message from in; ErrSessionClosed once in has ended
// (or the session is over).
func (c *stdioConn) Recv(ctx context.Context) (*jsonrpc.Message, error) {
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.eof:
		// incoming is unbuffered, so nothing read before EOF is left behind.
		return nil, server.ErrSessionClosed
	case <-c.done:
		return nil, server.ErrSessionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Send writes msg as one line on out.
func (c *stdioConn) Send(ctx context.Context, msg *jsonrpc.Message, _ json.RawMessage) error {
	if msg == nil {
		return errors.New("demo: nil message")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.done:
		return server.ErrSessionClosed
	default:
	}
	return c.write(msg)
}

// SessionID is "": a stdio session has no id.
func (c *stdioConn) SessionID() string { return "" }

// CloseStream is not possible on stdio: there is only one stream.
func (c *stdioConn) CloseStream(json.RawMessage) error {
	return errors.New("demo: a stdio session has a single stream that cannot be closed")
}
