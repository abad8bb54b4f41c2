// Package stdio frames JSON-RPC messages on the bridge's standard input and
// output: one message per line, UTF-8, no embedded newlines (MCP stdio
// transport, rules S1-S2).
//
// Lines have no length cap: tool results of many megabytes are normal, and the
// default bufio.Scanner limit of 64 KiB would silently break them. A Writer is
// the single writer of its sink, so concurrent relays never interleave bytes.
package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrLineTooLong is returned (wrapped) by ReadLine when a line exceeds the
// reader's limit. The rest of the line has been discarded; the next call reads
// the following line.
var ErrLineTooLong = errors.New("line too long")

// Reader reads newline-delimited messages.
type Reader struct {
	br  *bufio.Reader
	max int
}

// NewReader returns a Reader on r. max limits the size of one line in bytes;
// zero or negative means no limit.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next non-blank line without its terminator (LF or
// CRLF). At end of input it returns io.EOF; a final line without a newline is
// returned first. The returned slice is owned by the caller.
func (r *Reader) ReadLine() ([]byte, error) {
	for {
		line, err := r.readRaw()
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			return nil, err
		}
		line = trimEOL(line)
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		return line, nil
	}
}

// trimEOL removes one line terminator: "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n > 1 && b[n-2] == '\r' {
			b = b[:n-2]
		}
	}
	return b
}

// readRaw reads up to and including the next '\n', enforcing the limit while
// reading so that an oversized line never sits in memory whole. The limit
// applies to the line without its terminator.
func (r *Reader) readRaw() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		partial := errors.Is(err, bufio.ErrBufferFull)
		if r.max > 0 {
			n := len(buf) + len(chunk)
			content := n
			if partial {
				// A trailing CR may turn out to be half of a CRLF.
				if len(chunk) > 0 && chunk[len(chunk)-1] == '\r' {
					content--
				}
			} else if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				content--
				if (len(chunk) > 1 && chunk[len(chunk)-2] == '\r') ||
					(len(chunk) == 1 && len(buf) > 0 && buf[len(buf)-1] == '\r') {
					content--
				}
			}
			if content > r.max {
				if partial {
					n += r.discardLine()
				}
				return nil, fmt.Errorf("%w: more than %d bytes (%d read)", ErrLineTooLong, r.max, n)
			}
		}
		buf = append(buf, chunk...)
		if partial {
			continue
		}
		return buf, err
	}
}

func (r *Reader) discardLine() int {
	n := 0
	for {
		chunk, err := r.br.ReadSlice('\n')
		n += len(chunk)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return n
		}
	}
}

// largeMessage is the size from which Write sends the message and its
// newline in two calls instead of copying the message.
const largeMessage = 64 << 10

var newline = []byte{'\n'}

// Writer writes one message per line. It is safe for concurrent use; each
// Write is atomic with respect to the others.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes msg followed by a newline. msg must be compact JSON: a newline
// inside it would split the message, so it is refused.
func (w *Writer) Write(msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		return errors.New("stdio: message contains a newline")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(msg) >= largeMessage {
		// A write this large is split by the kernel on a pipe anyway (only
		// writes up to PIPE_BUF are atomic) and the mutex already keeps
		// messages whole, so the newline goes in a second call rather than
		// in a copy of a message that may be tens of megabytes.
		if _, err := w.w.Write(msg); err != nil {
			return err
		}
		_, err := w.w.Write(newline)
		return err
	}
	// One write call per message keeps the message whole even on pipes that
	// another process reads concurrently.
	buf := make([]byte, 0, len(msg)+1)
	buf = append(buf, msg...)
	buf = append(buf, '\n')
	_, err := w.w.Write(buf)
	return err
}
