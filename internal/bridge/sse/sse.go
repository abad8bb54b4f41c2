// Package sse parses Server-Sent Events streams as the HTML living standard
// defines them, which is stricter than what many MCP clients accept: lines may
// end in CR, LF or CRLF, the space after the colon is optional, data fields
// accumulate, comments are skipped, and retry takes only ASCII digits.
//
// The parser never waits for more input than it needs: a lone CR ends a line
// at once, so a stream that uses CR line endings is not held back until the
// next byte arrives.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"time"
)

// Event is one dispatched event.
type Event struct {
	// Type is the event field ("" means "message").
	Type string
	// Data is the joined data fields, without the final newline.
	Data []byte
	// ID is the id field, valid when HasID. An empty id resets the last event
	// id, as the standard says.
	ID    string
	HasID bool
	// Retry is the reconnection time, valid when HasRetry.
	Retry    time.Duration
	HasRetry bool
}

// Reader reads events from a stream.
type Reader struct {
	br        *bufio.Reader
	skipLF    bool // the previous line ended in CR: a following LF is part of it
	maxEvent  int
	firstLine bool
	midLine   bool // an over-long line was abandoned before its end
	skipEvent bool // the rest of an oversized event is still to be skipped
}

// ErrEventTooLarge is returned when an event's data exceeds the reader's limit,
// or when one line of the stream is longer than the limit plus a small
// allowance for the field name. The rest of the oversized event is skipped:
// the next call to Next returns the event after it.
var ErrEventTooLarge = errors.New("sse: event too large")

// lineSlack is how much longer than maxEvent a single line may be (room for
// the field name, the colon and the space).
const lineSlack = 64

// NewReader returns a Reader on r. maxEvent caps one event's data in bytes
// (zero or negative: no cap).
func NewReader(r io.Reader, maxEvent int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10), maxEvent: maxEvent, firstLine: true}
}

// Next returns the next event. Blocks of lines that set no field (only
// comments) are skipped. At the end of the stream it returns io.EOF; an event
// not terminated by a blank line is discarded, as the standard requires.
func (r *Reader) Next() (*Event, error) {
	if r.skipEvent {
		if err := r.skipRest(); err != nil {
			return nil, err
		}
	}
	var (
		ev      Event
		data    []byte
		hasData bool
		seen    bool
	)
	for {
		line, _, err := r.readLine(true)
		if err != nil {
			if err == ErrEventTooLarge {
				r.skipEvent = true
			}
			return nil, err
		}
		if len(line) == 0 {
			if !seen {
				continue
			}
			if hasData {
				ev.Data = data
				if ev.Data == nil {
					ev.Data = []byte{}
				}
			} else {
				ev.Data = []byte{}
			}
			return &ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			ev.Type = string(value)
			seen = true
		case "data":
			size := len(value)
			if hasData {
				size += len(data) + 1 // the newline that joins the fields
			}
			if r.maxEvent > 0 && size > r.maxEvent {
				r.skipEvent = true
				return nil, ErrEventTooLarge
			}
			if !hasData {
				// The line is the reader's own copy: the first data field
				// needs no other, however large.
				data = value
			} else {
				data = append(data, '\n')
				data = append(data, value...)
			}
			hasData = true
			seen = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID, ev.HasID = string(value), true
				seen = true
			}
		case "retry":
			if ms, ok := digits(value); ok {
				ev.Retry, ev.HasRetry = time.Duration(ms)*time.Millisecond, true
				seen = true
			}
		}
	}
}

// skipRest discards lines up to and including the blank line that ends the
// current event, keeping none of them in memory.
func (r *Reader) skipRest() error {
	for {
		partial := r.midLine // the first line read may be the tail of a long one
		_, n, err := r.readLine(false)
		if err != nil {
			return err
		}
		if n == 0 && !partial {
			r.skipEvent = false
			return nil
		}
	}
}

func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n > int64(time.Duration(1<<62)/time.Millisecond) {
		return 0, false
	}
	return n, true
}

// readLine returns the next line without its terminator, and its length. When
// keep is false the line's bytes are dropped and only counted. A kept line
// longer than the limit is not returned: ErrEventTooLarge is, after the bytes
// read so far are discarded, so the outcome does not depend on how the input
// was split into reads.
func (r *Reader) readLine(keep bool) ([]byte, int, error) {
	limit := 0
	if keep && r.maxEvent > 0 && r.maxEvent <= math.MaxInt-lineSlack {
		limit = r.maxEvent + lineSlack
	}
	// The pieces of a line longer than the read buffer are kept apart and
	// joined once at its end: growing one slice instead would allocate
	// several times the size of a large event on the way.
	var pieces [][]byte
	n := 0
	for {
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, n, err
		}
		if r.skipLF {
			r.skipLF = false
			if b[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		// Take what is buffered up to the first CR or LF.
		buf, _ := r.br.Peek(r.br.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		end := i
		if i < 0 {
			end = len(buf)
		}
		if limit > 0 && n+end > limit {
			r.firstLine = false
			if i < 0 {
				r.br.Discard(len(buf))
				r.midLine = true
			} else {
				r.skipLF = buf[i] == '\r'
				r.br.Discard(i + 1)
				r.midLine = false
			}
			return nil, 0, ErrEventTooLarge
		}
		if i < 0 {
			if keep {
				pieces = append(pieces, bytes.Clone(buf))
			}
			n += end
			r.br.Discard(len(buf))
			continue
		}
		var line []byte
		if keep {
			line = make([]byte, 0, n+end)
			for _, p := range pieces {
				line = append(line, p...)
			}
			line = append(line, buf[:end]...)
		}
		n += end
		r.skipLF = buf[i] == '\r'
		r.br.Discard(i + 1)
		r.midLine = false
		if r.firstLine {
			r.firstLine = false
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		return line, n, nil
	}
}
