package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// ErrSessionExpired means the server no longer knows our session: a 404 (or,
// from some servers, a 400 naming the session) to a request that carried a
// session id. The server did not process that request, so it is safe to
// re-initialize and send it again (rule L9).
var ErrSessionExpired = errors.New("session expired")

// ErrStreamLost means a response stream ended before the response arrived and
// could not be resumed. The server may or may not have processed the request,
// so it must not be resent blindly.
var ErrStreamLost = errors.New("the connection to the server was lost before the response arrived")

// HTTPError is a non-success HTTP status from the server.
type HTTPError struct {
	Status     int
	Body       string         // a short, printable prefix of the body
	RPC        *jsonrpc.Error // a JSON-RPC error carried in the body, if any
	RetryAfter time.Duration  // from Retry-After, if any
	header     http.Header    // kept for callers that need WWW-Authenticate etc.
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("server answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	switch {
	case e.RPC != nil && e.RPC.Message != "":
		msg += ": " + e.RPC.Message
	case e.Body != "":
		msg += ": " + e.Body
	}
	switch e.Status {
	case http.StatusUnauthorized:
		msg += " (the server wants credentials: check the endpoint's token or headers, or sign in again)"
	case http.StatusForbidden:
		msg += " (the credentials were refused or lack a permission: check the endpoint's token or scopes)"
	case http.StatusTooManyRequests:
		if e.RetryAfter > 0 {
			msg += fmt.Sprintf(" (rate limited; retry after %s)", e.RetryAfter.Round(time.Second))
		}
	}
	return msg
}

// Header returns the response headers.
func (e *HTTPError) Header() http.Header { return e.header }

// neverSent reports whether err proves the request never reached the server
// (no connection could be made), which makes a resend safe.
func neverSent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	return false
}

// redactErr keeps the query and user info of the endpoint URL (which may
// carry a token) out of transport errors, which end up in logs and in error
// messages to the client: net/http puts the full URL in every *url.Error.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = RedactURL(ue.URL)
	}
	return err
}

// describe turns a transport error into a sentence for the desktop client.
func describe(err error, rawURL string) string {
	url := RedactURL(rawURL)
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		return he.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "the request to the server timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot reach the MCP server at %s: connection refused (is it running?)", url)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Sprintf("cannot reach the MCP server at %s: the host name %q does not resolve", url, dnsErr.Name)
	}
	if !neverSent(err) && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
		// The request was written, so the server may have acted on it: say
		// so instead of a bare "EOF", and that it was not sent again.
		return fmt.Sprintf("the MCP server at %s closed the connection before answering; the request may or may not have been processed, so it was not resent", url)
	}
	s := err.Error()
	if neverSent(err) {
		return fmt.Sprintf("cannot reach the MCP server at %s: %s", url, s)
	}
	return strings.TrimPrefix(s, "bridge: ")
}

// errorCode picks the JSON-RPC code for a relay failure.
func errorCode(err error) int {
	var he *HTTPError
	if errors.As(err, &he) && he.RPC != nil && he.RPC.Code != 0 {
		return he.RPC.Code
	}
	return jsonrpc.CodeInternalError
}
