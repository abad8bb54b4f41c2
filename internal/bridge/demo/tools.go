package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// Limits that keep a demo call from eating the machine.
const (
	maxBigBytes = 64 << 20
	maxSteps    = 10000
)

type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

func object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func toolList() []tool {
	return []tool{
		{"echo", "Returns the message it is given.",
			object(map[string]any{"message": map[string]any{"type": "string", "description": "text to echo"}}, "message")},
		{"add", "Adds two numbers.",
			object(map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}, "a", "b")},
		{"slow", "Works for steps*delayMs milliseconds, sending a progress notification after each step. Honours cancellation.",
			object(map[string]any{
				"steps":   map[string]any{"type": "integer", "minimum": 0, "default": 5},
				"delayMs": map[string]any{"type": "integer", "minimum": 0, "default": 100},
			})},
		{"ask", "Asks the client's model a question (sampling/createMessage) and returns the answer.",
			object(map[string]any{"question": map[string]any{"type": "string"}}, "question")},
		{"big", "Returns a text of the given number of bytes.",
			object(map[string]any{"bytes": map[string]any{"type": "integer", "minimum": 0}}, "bytes")},
		{"drop", "Sends progress, then closes the request's SSE stream before answering, so the client must resume it (needs an event store on the server).",
			object(map[string]any{"steps": map[string]any{"type": "integer", "minimum": 0, "default": 2}})},
	}
}

// callResult is a tools/call result with text content.
type callResult struct {
	Content []textContent `json:"content"`
	IsError bool          `json:"isError,omitempty"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func text(s string) callResult { return callResult{Content: []textContent{{"text", s}}} }

// toolError is a tool failure reported to the model (isError), as opposed to
// a protocol error.
func toolError(format string, args ...any) callResult {
	r := text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

func (ss *session) callTool(ctx context.Context, msg *jsonrpc.Message) (any, *jsonrpc.Error) {
	var p callParams
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	switch p.Name {
	case "echo":
		var a struct {
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(args, &a); err != nil || a.Message == nil {
			return toolError("echo needs a string argument \"message\""), nil
		}
		return text(*a.Message), nil
	case "add":
		var a struct {
			A, B *float64
		}
		if err := json.Unmarshal(args, &a); err != nil || a.A == nil || a.B == nil {
			return toolError("add needs number arguments \"a\" and \"b\""), nil
		}
		return text(fmt.Sprint(*a.A + *a.B)), nil
	case "slow":
		a := struct {
			Steps   int `json:"steps"`
			DelayMs int `json:"delayMs"`
		}{5, 100}
		if err := json.Unmarshal(args, &a); err != nil || a.Steps < 0 || a.Steps > maxSteps || a.DelayMs < 0 {
			return toolError("slow needs 0 <= steps <= %d and delayMs >= 0", maxSteps), nil
		}
		return ss.slow(ctx, msg.ID, p.Meta.ProgressToken, a.Steps, time.Duration(a.DelayMs)*time.Millisecond)
	case "ask":
		var a struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return toolError("ask needs a string argument \"question\""), nil
		}
		return ss.ask(ctx, msg.ID, a.Question), nil
	case "big":
		var a struct {
			Bytes int `json:"bytes"`
		}
		if err := json.Unmarshal(args, &a); err != nil || a.Bytes < 0 || a.Bytes > maxBigBytes {
			return toolError("big needs 0 <= bytes <= %d", maxBigBytes), nil
		}
		return text(strings.Repeat("x", a.Bytes)), nil
	case "drop":
		a := struct {
			Steps int `json:"steps"`
		}{2}
		if err := json.Unmarshal(args, &a); err != nil || a.Steps < 0 || a.Steps > maxSteps {
			return toolError("drop needs 0 <= steps <= %d", maxSteps), nil
		}
		return ss.drop(ctx, msg.ID, p.Meta.ProgressToken, a.Steps), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Unknown tool: " + p.Name}
}

// progress sends notifications/progress on the request's stream when the
// client asked for progress with a token.
func (ss *session) progress(ctx context.Context, related, token json.RawMessage, i, total int, message string) {
	if len(token) == 0 || string(token) == "null" {
		return
	}
	n, err := jsonrpc.NewNotification("notifications/progress", map[string]any{
		"progressToken": token,
		"progress":      i,
		"total":         total,
		"message":       message,
	})
	if err == nil {
		err = ss.c.Send(ctx, n, related)
	}
	if err != nil {
		ss.log.Debug("sending progress", "err", err)
	}
}

func (ss *session) slow(ctx context.Context, id, token json.RawMessage, steps int, delay time.Duration) (any, *jsonrpc.Error) {
	t := time.NewTimer(delay)
	defer t.Stop()
	for i := 1; i <= steps; i++ {
		t.Reset(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cancelled"}
		}
		ss.progress(ctx, id, token, i, steps, fmt.Sprintf("step %d of %d", i, steps))
	}
	return text(fmt.Sprintf("done after %d steps", steps)), nil
}

func (ss *session) ask(ctx context.Context, id json.RawMessage, question string) callResult {
	ss.mu.Lock()
	sampling := ss.sampling
	ss.mu.Unlock()
	if !sampling {
		return toolError("the client did not declare the sampling capability")
	}
	resp, err := ss.request(ctx, id, "sampling/createMessage", map[string]any{
		"messages": []map[string]any{{
			"role":    "user",
			"content": map[string]any{"type": "text", "text": question},
		}},
		"maxTokens": 100,
	})
	if err != nil {
		return toolError("sampling failed: %v", err)
	}
	if resp.Error != nil {
		return toolError("sampling failed: %s", resp.Error.Message)
	}
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		return toolError("sampling result: %v", err)
	}
	// content is one block, or (with sampling tools) a list of blocks.
	var one textContent
	if json.Unmarshal(r.Content, &one) == nil && one.Type == "text" {
		return text(one.Text)
	}
	var many []textContent
	if json.Unmarshal(r.Content, &many) == nil {
		var b strings.Builder
		for _, c := range many {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
		return text(b.String())
	}
	return toolError("sampling result has no text content")
}

// drop sends steps progress notifications, has the server close the stream,
// then sends one more and answers: the client sees the end of the call only by
// resuming the stream.
func (ss *session) drop(ctx context.Context, id, token json.RawMessage, steps int) callResult {
	for i := 1; i <= steps; i++ {
		ss.progress(ctx, id, token, i, steps+1, fmt.Sprintf("step %d before the drop", i))
	}
	if err := ss.c.CloseStream(id); err != nil {
		return toolError("closing the stream: %v", err)
	}
	ss.progress(ctx, id, token, steps+1, steps+1, "after the drop")
	return text(fmt.Sprintf("survived the drop after %d steps", steps))
}
