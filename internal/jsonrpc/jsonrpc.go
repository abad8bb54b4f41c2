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
func Parse(data []byte) (*Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("empty message")
	}
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	if data[0] != '{' {
		return nil, ErrNotObject
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding message: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(data))
	if err := json.Compact(&buf, data); err != nil {
		return nil, fmt.Errorf("compacting message: %w", err)
	}
	m.Raw = buf.Bytes()
	return &m, nil
}

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

// IDKey normalises a raw id to a map key.
func IDKey(id json.RawMessage) string {
	if len(id) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, id); err != nil {
		return string(id)
	}
	return buf.String()
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
