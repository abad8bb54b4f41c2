// Package demo is the demo MCP server behind `mcpbridge serve --demo` and the
// relay's tests: a server.Handler that speaks enough MCP (initialize, ping,
// tools) for a real client, with tools chosen to exercise what a relay must
// carry: progress notifications, cancellation, a server-to-client request
// (sampling), large results and a stream the server closes mid-call.
package demo
