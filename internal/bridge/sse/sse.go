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
}

// ErrEventTooLarge is returned when an event's data exceeds the reader's limit.
var ErrEventTooLarge = errors.New("sse: event too large")

// NewReader returns a Reader on r. maxEvent caps one event's data in bytes
// (zero or negative: no cap).
func NewReader(r io.Reader, maxEvent int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10), maxEvent: maxEvent, firstLine: true}
}

// Next returns the next event. Blocks of lines that set no field (only
// comments) are skipped. At the end of the stream it returns io.EOF; an event
// not terminated by a blank line is discarded, as the standard requires.
func (r *Reader) Next() (*Event, error) {
	var (
		ev      Event
		data    []byte
		hasData bool
		seen    bool
	)
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if !seen {
				continue
			}
			if hasData {
				ev.Data = data[:len(data)-1] // drop the final newline
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
			if r.maxEvent > 0 && len(data)+len(value) > r.maxEvent {
				return nil, ErrEventTooLarge
			}
			data = append(data, value...)
			data = append(data, '\n')
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

// readLine returns the next line without its terminator. The returned slice is
// only valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, err
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
		if i < 0 {
			line = append(line, buf...)
			r.br.Discard(len(buf))
			if r.maxEvent > 0 && len(line) > r.maxEvent+64 {
				return nil, ErrEventTooLarge
			}
			continue
		}
		line = append(line, buf[:i]...)
		if buf[i] == '\r' {
			r.skipLF = true
		}
		r.br.Discard(i + 1)
		if r.firstLine {
			r.firstLine = false
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		return line, nil
	}
}
