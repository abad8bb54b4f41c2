package demo_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
)

func TestServeStdio(t *testing.T) {
	in := strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`not json`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"nope"}`,
	}, "\n") + "\n")
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- demo.ServeStdio(context.Background(), demo.New(nil), in, pw)
		pw.Close()
	}()
	got := map[string]bool{}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, `"id":1`) && strings.Contains(line, `"protocolVersion":"2025-06-18"`):
			got["init"] = true
		case strings.Contains(line, `"code":-32700`):
			got["parse"] = true
		case strings.Contains(line, `"id":2`) && strings.Contains(line, `"text":"hi"`):
			got["echo"] = true
		case strings.Contains(line, `"id":3`) && strings.Contains(line, `"code":-32601`):
			got["unknown"] = true
		default:
			t.Errorf("unexpected line %s", line)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("answers seen: %v", got)
	}
}

func TestVersionNegotiation(t *testing.T) {
	for _, tc := range []struct{ asked, want string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-11-25", "2025-11-25"},
		{"2099-01-01", "2025-11-25"},
	} {
		in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + tc.asked + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
		var out strings.Builder
		if err := demo.ServeStdio(context.Background(), demo.New(nil), in, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), `"protocolVersion":"`+tc.want+`"`) || !strings.Contains(out.String(), `"name":"mcpbridge-demo"`) {
			t.Errorf("asked %s: %s", tc.asked, out.String())
		}
	}
}
