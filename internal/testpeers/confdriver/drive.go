package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"
)

// toolCall is one tools/call to make.
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

type tool struct {
	Name        string     `json:"name"`
	InputSchema jsonSchema `json:"inputSchema"`
}

// drive runs one scenario through the bridge.
func drive(ctx context.Context, cfg *config, logf func(string, ...any)) (err error) {
	conn, err := startBridge(cfg, logf, serverRequestHandler(logf))
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			conn.kill()
			return
		}
		if serr := conn.shutdown(5 * time.Second); serr != nil {
			err = serr
		} else if perr := conn.protocolError(); perr != nil {
			err = perr
		}
	}()

	init, err := conn.call(ctx, "initialize", map[string]any{
		"protocolVersion": cfg.protocol,
		"capabilities": map[string]any{
			"roots":       map[string]any{"listChanged": true},
			"sampling":    map[string]any{},
			"elicitation": map[string]any{},
		},
		"clientInfo": map[string]any{"name": "mcpbridge-confdriver", "version": "1.0.0"},
	})
	if err != nil {
		return err
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(init, &ir); err != nil {
		return fmt.Errorf("initialize result: %v", err)
	}
	if ir.ProtocolVersion == "" {
		return fmt.Errorf("initialize result has no protocolVersion: %s", init)
	}
	logf("initialized: server %s %s, protocol %s", ir.ServerInfo.Name, ir.ServerInfo.Version, ir.ProtocolVersion)
	if err := conn.notify("notifications/initialized", nil); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}

	switch cfg.scenario {
	case "initialize":
		return nil
	}
	// Every other scenario (tools_call, sse-retry, elicitation-*, auth/* and
	// the everything server) is exercised by listing the tools and calling
	// them.
	if _, ok := ir.Capabilities["tools"]; !ok && cfg.calls == nil {
		logf("server declares no tools capability; nothing more to do")
		return nil
	}
	tools, err := listTools(ctx, conn)
	if err != nil {
		return err
	}
	calls, err := planCalls(cfg.calls, tools)
	if err != nil {
		return err
	}
	for i, tc := range calls {
		// Ask for progress, as desktop clients do.
		tc.Meta = map[string]any{"progressToken": fmt.Sprintf("confdriver-%d", i+1)}
		args, _ := json.Marshal(tc.Arguments)
		logf("tools/call %s %s", tc.Name, args)
		res, err := conn.call(ctx, "tools/call", tc)
		if err != nil {
			return err
		}
		var tr struct {
			IsError bool              `json:"isError"`
			Content []json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(res, &tr); err != nil {
			return fmt.Errorf("tools/call %s result: %v", tc.Name, err)
		}
		if tr.IsError {
			return fmt.Errorf("tools/call %s: tool error: %s", tc.Name, res)
		}
		logf("tools/call %s -> %.300s", tc.Name, res)
	}
	return nil
}

func listTools(ctx context.Context, conn *bridgeConn) (map[string]tool, error) {
	tools := map[string]tool{}
	var cursor string
	for page := 0; page < 100; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		res, err := conn.call(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		var lr struct {
			Tools      []tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &lr); err != nil {
			return nil, fmt.Errorf("tools/list result: %v", err)
		}
		for _, t := range lr.Tools {
			tools[t.Name] = t
		}
		if lr.NextCursor == "" {
			return tools, nil
		}
		cursor = lr.NextCursor
	}
	return nil, errors.New("tools/list: more than 100 pages")
}

// planCalls picks what to call: the explicit calls (arguments made up from
// the schema when not given), else every listed tool in name order.
func planCalls(explicit []toolCall, tools map[string]tool) ([]toolCall, error) {
	if explicit != nil {
		out := make([]toolCall, 0, len(explicit))
		for _, tc := range explicit {
			t, ok := tools[tc.Name]
			if !ok {
				return nil, fmt.Errorf("tools/list did not list %q", tc.Name)
			}
			if tc.Arguments == nil {
				tc.Arguments = t.InputSchema.sampleArgs()
			}
			out = append(out, tc)
		}
		return out, nil
	}
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]toolCall, 0, len(names))
	for _, n := range names {
		t := tools[n]
		out = append(out, toolCall{Name: n, Arguments: t.InputSchema.sampleArgs()})
	}
	return out, nil
}

// serverRequestHandler answers what a server may ask a desktop client.
func serverRequestHandler(logf func(string, ...any)) func(string, json.RawMessage) (any, *rpcError) {
	return func(method string, params json.RawMessage) (any, *rpcError) {
		switch method {
		case "ping":
			return map[string]any{}, nil
		case "roots/list":
			dir, err := os.Getwd()
			if err != nil {
				dir = os.TempDir()
			}
			return map[string]any{"roots": []map[string]any{{"uri": "file://" + dir, "name": "workspace"}}}, nil
		case "sampling/createMessage":
			return map[string]any{
				"role":       "assistant",
				"content":    map[string]any{"type": "text", "text": "confdriver sampled reply"},
				"model":      "confdriver",
				"stopReason": "endTurn",
			}, nil
		case "elicitation/create":
			var p struct {
				Mode            string     `json:"mode"`
				Message         string     `json:"message"`
				RequestedSchema jsonSchema `json:"requestedSchema"`
			}
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, &rpcError{Code: -32602, Message: "invalid elicitation params: " + err.Error()}
			}
			mode := p.Mode
			if mode == "" {
				mode = "form"
			}
			logf("elicitation (%s mode): %q", mode, p.Message)
			if p.Mode == "url" {
				return map[string]any{"action": "accept"}, nil
			}
			return map[string]any{"action": "accept", "content": p.RequestedSchema.formContent()}, nil
		}
		return nil, &rpcError{Code: -32601, Message: "method not found: " + method}
	}
}
