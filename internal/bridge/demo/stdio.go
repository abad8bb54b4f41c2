package demo

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/bridge/stdio"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// ServeStdio serves one session of h over newline-delimited JSON-RPC on in
// and out, with no HTTP in between: the floor against which the bridge's
// latency is measured. It returns when in ends (after h has answered what it
// was still working on) or ctx is done. A line that is not JSON-RPC is
// answered with a parse error and skipped.
func ServeStdio(ctx context.Context, h server.Handler, in io.Reader, out io.Writer) error {
	c := &stdioConn{w: stdio.NewWriter(out), msgs: make(chan *jsonrpc.Message), eof: make(chan struct{})}
	readErr := make(chan error, 1)
	go func() {
		defer close(c.eof)
		r := stdio.NewReader(in, 0)
		for {
			line, err := r.ReadLine()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr <- err
				}
				return
			}
			msg, err := jsonrpc.Parse(line)
			if err == nil && msg.Kind() == jsonrpc.KindInvalid {
				err = errors.New("not a JSON-RPC request, notification or response")
			}
			if err != nil {
				c.w.Write(jsonrpc.NewError(nil, jsonrpc.CodeParseError, "Parse error: "+err.Error(), nil).Bytes())
				continue
			}
			select {
			case c.msgs <- msg:
			case <-ctx.Done():
				return
			}
		}
	}()
	err := h.ServeSession(ctx, c)
	select {
	case rerr := <-readErr:
		return errors.Join(err, rerr)
	default:
	}
	if errors.Is(err, server.ErrSessionClosed) {
		err = nil
	}
	return err
}

// stdioConn is a server.Conn on stdio. There are no streams: every message
// goes on stdout.
type stdioConn struct {
	w    *stdio.Writer
	msgs chan *jsonrpc.Message
	eof  chan struct{}
}

func (c *stdioConn) Recv(ctx context.Context) (*jsonrpc.Message, error) {
	select {
	case msg := <-c.msgs:
		return msg, nil
	case <-c.eof:
		return nil, server.ErrSessionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *stdioConn) Send(ctx context.Context, msg *jsonrpc.Message, _ json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.w.Write(msg.Bytes())
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) CloseStream(json.RawMessage) error {
	return errors.New("stdio has no streams to close")
}
