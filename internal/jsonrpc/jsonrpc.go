// Package jsonrpc holds the JSON-RPC 2.0 envelope that every part of mcpbridge
// speaks: the stdio side, the Streamable HTTP client and our own server side.
//
// The bridge relays messages it does not need to understand, so a Message keeps
// the params, result and error as raw JSON and only the envelope fields it routes
// on (id, method) are decoded. Raw holds the compact encoding of the whole
// message so that relaying never re-encodes a large result.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Kind classifies a message by the fields it carries.
type Kind int

const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Message is one JSON-RPC 2.0 message. ID, Params and Result stay raw.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`

	// Raw is the compact encoding of the message as received (or as built by
	// Encode). It is not marshalled.
	Raw []byte `json:"-"`
}

// ErrNotObject is returned by Parse for JSON that is valid but not an object
// (a batch array, a string, a number...).
var ErrNotObject = errors.New("message is not a JSON object")

// Parse decodes one message. The input must be a single JSON object; the
// returned Message's Raw is its compact form (a copy, the input is not kept).
// Member names are matched exactly, as JSON-RPC requires: "ID" or "Method"
// are unknown members, not the id or the method.
func Parse(data []byte) (*Message, error) { return parse(data, false) }

// ParseOwned is Parse for a buffer the caller hands over and never touches
// again: when the message is already compact, as servers almost always send
// it, Raw is that buffer rather than a copy. A tool result of 50 MB is then
// held once on its way through the bridge instead of twice.
func ParseOwned(data []byte) (*Message, error) { return parse(data, true) }

func parse(data []byte, owned bool) (*Message, error) {
	data = bytes.Trim(data, jsonSpace)
	if len(data) == 0 {
		return nil, errors.New("empty message")
	}
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	if data[0] != '{' {
		return nil, ErrNotObject
	}
	return parseValid(data, owned)
}

// parseValid parses data, a valid JSON object. With owned, a compact data
// becomes Raw itself (its capacity capped so an append never writes past it).
func parseValid(data []byte, owned bool) (*Message, error) {
	var raw []byte
	if owned && isCompact(data) {
		raw = data[:len(data):len(data)]
	} else {
		var buf bytes.Buffer
		buf.Grow(len(data))
		if err := json.Compact(&buf, data); err != nil {
			return nil, fmt.Errorf("compacting message: %w", err)
		}
		raw = buf.Bytes()
	}
	m := Message{Raw: raw}
	// encoding/json matches struct fields case-insensitively, so decode the
	// members by their exact names. The raw members are slices of Raw rather
	// than copies: a tool result of many megabytes is held once, not twice.
	members, err := objectMembers(m.Raw)
	if err != nil {
		return nil, fmt.Errorf("decoding message: %w", err)
	}
	m.ID, m.Params, m.Result = members["id"], members["params"], members["result"]
	for name, dst := range map[string]any{"jsonrpc": &m.JSONRPC, "method": &m.Method, "error": &m.Error} {
		if raw, ok := members[name]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return nil, fmt.Errorf("decoding message: %s: %w", name, err)
			}
		}
	}
	return &m, nil
}

// objectMembers splits obj, a valid and compact JSON object, into its members
// by decoded name (the last one wins, as with encoding/json). Each value is a
// slice of obj whose capacity ends with the value, so appending to it never
// overwrites obj.
func objectMembers(obj []byte) (map[string]json.RawMessage, error) {
	members := make(map[string]json.RawMessage, 4)
	i := 1 // after '{'
	for i < len(obj) && obj[i] != '}' {
		end, err := skipValue(obj, i)
		if err != nil || obj[i] != '"' || end >= len(obj) || obj[end] != ':' {
			return nil, errors.New("malformed object")
		}
		lit := obj[i:end]
		name := string(lit[1 : len(lit)-1])
		if bytes.IndexByte(lit, '\\') >= 0 || !utf8.Valid(lit) {
			// Escapes, or bytes encoding/json would replace with U+FFFD.
			if err := json.Unmarshal(lit, &name); err != nil {
				return nil, err
			}
		}
		i = end + 1
		if end, err = skipValue(obj, i); err != nil {
			return nil, err
		}
		members[name] = json.RawMessage(obj[i:end:end])
		i = end
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
	return members, nil
}

// skipValue returns the index just past the compact JSON value at obj[i].
func skipValue(obj []byte, i int) (int, error) {
	if i >= len(obj) {
		return 0, errors.New("unexpected end of object")
	}
	switch obj[i] {
	case '"':
		return skipString(obj, i)
	case '{', '[':
		depth := 0
		for i < len(obj) {
			switch obj[i] {
			case '"':
				end, err := skipString(obj, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errors.New("unterminated value")
	}
	// A number, true, false or null: up to the next delimiter.
	for j := i; j < len(obj); j++ {
		if c := obj[j]; c == ',' || c == '}' || c == ']' {
			return j, nil
		}
	}
	return 0, errors.New("unterminated value")
}

// skipString returns the index just past the string literal at obj[i].
func skipString(obj []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexAny(obj[j:], `"\`)
		if k < 0 {
			return 0, errors.New("unterminated string")
		}
		j += k
		if obj[j] == '"' {
			return j + 1, nil
		}
		j += 2 // an escape: the next byte is never the closing quote
	}
}

// jsonSpace is the whitespace JSON allows around values.
const jsonSpace = " \t\r\n"

// Kind reports what the message is. A request has a method and a non-null id;
// a notification has a method and no id; a response has an id and exactly one
// of result or error.
func (m *Message) Kind() Kind {
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	switch {
	case m.Method != "" && hasID:
		return KindRequest
	case m.Method != "" && len(m.ID) == 0:
		return KindNotification
	case m.Method == "" && len(m.ID) > 0 && (m.Result != nil) != (m.Error != nil):
		return KindResponse
	}
	return KindInvalid
}

// IDKey returns the id in a form usable as a map key (its compact JSON text).
func (m *Message) IDKey() string { return IDKey(m.ID) }

// IDKey normalises a raw id to a map key, so that a response is matched to
// its request even when the peer re-encoded the id: whitespace does not count,
// a string id is keyed by its value (a Python server sends "é" back as
// "\u00e9", a Go server escapes <, > and &), and an integral number by its
// integer value (1.0 and 1e0 are 1). Distinct ids never share a key; a string
// id and a number id never do.
func IDKey(id json.RawMessage) string {
	id = bytes.Trim(id, jsonSpace)
	if len(id) == 0 {
		return ""
	}
	switch c := id[0]; {
	case c == '"':
		if k, ok := stringKey(id); ok {
			return k
		}
	case c == '-' || ('0' <= c && c <= '9'):
		if f, err := strconv.ParseFloat(string(id), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return strconv.FormatInt(int64(f), 10)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, id); err != nil {
		return string(id)
	}
	return buf.String()
}

// shortEscapes maps the letter of a two-character JSON escape to its character.
var shortEscapes = map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// stringKey re-encodes a JSON string literal in one canonical form: escapes
// are decoded and the text is written again escaping only '"', '\\' and
// control characters. Bytes that are not UTF-8 and lone surrogate escapes are
// kept as they are, so that distinct ids never share a key.
func stringKey(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[len(lit)-1] != '"' || !json.Valid(lit) {
		return "", false
	}
	s := lit[1 : len(lit)-1]
	var b strings.Builder
	b.Grow(len(lit))
	b.WriteByte('"')
	put := func(r rune) {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	hex := func(h []byte) rune {
		n, _ := strconv.ParseUint(string(h), 16, 16)
		return rune(n)
	}
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i]) // raw bytes, valid UTF-8 or not, stay as they are
			i++
			continue
		}
		c := s[i+1]
		i += 2
		if c != 'u' {
			put(shortEscapes[c])
			continue
		}
		r := hex(s[i : i+4])
		i += 4
		if utf16.IsSurrogate(r) {
			if r < 0xDC00 && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
				if pair := utf16.DecodeRune(r, hex(s[i+2:i+6])); pair != utf8.RuneError {
					put(pair)
					i += 6
					continue
				}
			}
			fmt.Fprintf(&b, "\\u%04x", r) // a lone surrogate, kept escaped
			continue
		}
		put(r)
	}
	b.WriteByte('"')
	return b.String(), true
}

// Encode marshals m compactly, sets m.Raw and returns it.
func (m *Message) Encode() ([]byte, error) {
	if m.JSONRPC == "" {
		m.JSONRPC = "2.0"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	m.Raw = b
	return b, nil
}

// Bytes returns Raw, encoding the message first if needed.
func (m *Message) Bytes() []byte {
	if m.Raw == nil {
		if _, err := m.Encode(); err != nil {
			return nil
		}
	}
	return m.Raw
}

// NewRequest builds a request with the given id and params (marshalled).
func NewRequest(id json.RawMessage, method string, params any) (*Message, error) {
	m := &Message{JSONRPC: "2.0", ID: id, Method: method}
	if params != nil {
		p, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		m.Params = p
	}
	_, err := m.Encode()
	return m, err
}

// NewNotification builds a notification.
func NewNotification(method string, params any) (*Message, error) {
	return NewRequest(nil, method, params)
}

// NewResult builds a success response.
func NewResult(id json.RawMessage, result any) (*Message, error) {
	r, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	m := &Message{JSONRPC: "2.0", ID: id, Result: r}
	_, err = m.Encode()
	return m, err
}

// NewError builds an error response. A nil id is sent as null, as JSON-RPC
// requires when the request id could not be determined.
func NewError(id json.RawMessage, code int, msg string, data any) *Message {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e := &Error{Code: code, Message: msg}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	m := &Message{JSONRPC: "2.0", ID: id, Error: e}
	m.Encode()
	return m
}

// isCompact reports whether valid JSON data has no whitespace outside its
// strings, that is, whether json.Compact would leave it unchanged.
func isCompact(data []byte) bool {
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}
