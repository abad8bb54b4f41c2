package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// probeProtocolVersion is what Probe asks for; servers answer with the
// version they pick, which is what ProbeResult reports.
const probeProtocolVersion = "2025-11-25"

// probeTerminateTimeout bounds the DELETE that ends the probe's session,
// so a server that hangs on it does not hold up the answer.
const probeTerminateTimeout = 2 * time.Second

// ProbeResult is what a test connection found out about a server.
type ProbeResult struct {
	ServerName      string
	ServerVersion   string
	ProtocolVersion string
	Tools           int           // tools/list entries, all pages
	RoundTrip       time.Duration // initialize to the last tools/list answer
}

// Probe checks that the endpoint in opts works the way a desktop client
// would use it: initialize, notifications/initialized, tools/list (every
// page), then it ends the session. Errors are sentences for people (the
// tray shows them as is); they never contain header values.
func Probe(ctx context.Context, opts ClientOptions) (ProbeResult, error) {
	c, err := NewClient(opts)
	if err != nil {
		return ProbeResult{}, err
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTerminateTimeout)
		defer cancel()
		c.Terminate(tctx)
	}()

	var res ProbeResult
	start := time.Now()
	ids := 0
	call := func(method string, params any) (json.RawMessage, error) {
		ids++
		msg, err := jsonrpc.NewRequest(json.RawMessage(fmt.Sprint(ids)), method, params)
		if err != nil {
			return nil, err
		}
		var resp *jsonrpc.Message
		err = c.Post(ctx, msg, func(m *jsonrpc.Message) {
			if m.Kind() == jsonrpc.KindResponse && m.IDKey() == msg.IDKey() {
				resp = m
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %s", method, describe(err, c.URL()))
		}
		if resp == nil {
			return nil, fmt.Errorf("%s: the server sent no answer", method)
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: the server answered with an error: %s", method, resp.Error.Message)
		}
		return resp.Result, nil
	}

	raw, err := call("initialize", map[string]any{
		"protocolVersion": probeProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcpbridge-probe", "version": "1"},
	})
	if err != nil {
		return res, err
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(raw, &init); err != nil {
		return res, fmt.Errorf("initialize: the server's answer is not an MCP initialize result: %v", err)
	}
	res.ServerName, res.ServerVersion, res.ProtocolVersion = init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion

	note, err := jsonrpc.NewNotification("notifications/initialized", nil)
	if err != nil {
		return res, err
	}
	if err := c.Post(ctx, note, func(*jsonrpc.Message) {}); err != nil {
		return res, fmt.Errorf("notifications/initialized: %s", describe(err, c.URL()))
	}

	// Pages are followed so the count matches what a client sees; the cap
	// stops a server that hands out cursors forever.
	var cursor string
	for page := 0; page < 100; page++ {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := call("tools/list", params)
		if err != nil {
			return res, err
		}
		var list struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return res, fmt.Errorf("tools/list: the server's answer is not a tool list: %v", err)
		}
		res.Tools += len(list.Tools)
		if cursor = list.NextCursor; cursor == "" {
			break
		}
	}
	res.RoundTrip = time.Since(start)
	return res, nil
}
