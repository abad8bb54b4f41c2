// Package server is mcpbridge's own Streamable HTTP server side: a session
// manager that serves one MCP endpoint (MCP revision 2025-11-25, stateful,
// plus a stateless mode) and hands every session's messages to a Handler.
//
// It exists so that `mcpbridge serve`, the demo server and the relay's tests
// have a server whose behaviour we control completely, including the faults a
// relay has to survive: sessions that vanish (TerminateAll), idle reaping and
// streams the server closes before the response (Conn.CloseStream).
//
// The manager knows the transport, not the MCP methods: it routes messages by
// their JSON-RPC id, and the only method it inspects besides "initialize" is
// "notifications/cancelled", so that a request the handler will never answer
// does not keep its stream open.
package server
