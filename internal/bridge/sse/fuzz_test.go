package sse

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// encode writes events back in SSE syntax.
func encode(evs []ev) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		if e.Err != "" {
			continue
		}
		fmt.Fprintf(&b, "event: %s\n", e.Type)
		if e.HasID {
			fmt.Fprintf(&b, "id: %s\n", e.ID)
		}
		if e.HasRetry {
			fmt.Fprintf(&b, "retry: %d\n", e.Retry.Milliseconds())
		}
		if e.Data != "" {
			for _, l := range strings.Split(e.Data, "\n") {
				fmt.Fprintf(&b, "data: %s\n", l)
			}
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\"}\n\n"), uint16(0))
	f.Add([]byte("\xEF\xBB\xBFid: 0\r\ndata:\r\n\r\n: keep-alive\r\rretry: 10x\rdata:  a\rdata\r\r"), uint16(0))
	f.Add([]byte("data: 123456\ndata: tail\n\nid\x00: x\nid: a\x00\ndata: ok\n\n"), uint16(5))
	f.Add([]byte("data: "+strings.Repeat("x", 80)+"\n\ndata: ok\n\n"), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, m uint16) {
		max := int(m)
		whole := collect(t, bytes.NewReader(data), max)
		for _, e := range whole {
			if e.Err != "" {
				if max == 0 {
					t.Fatalf("error without a limit: %v", e.Err)
				}
				continue
			}
			if strings.ContainsRune(e.Data, '\r') {
				t.Fatalf("data contains CR: %q", e.Data)
			}
			if strings.ContainsAny(e.Type, "\r\n") || strings.ContainsAny(e.ID, "\r\n\x00") {
				t.Fatalf("bad type or id: %v", e)
			}
			if e.Retry < 0 || (!e.HasRetry && e.Retry != 0) || (!e.HasID && e.ID != "") {
				t.Fatalf("inconsistent event: %v", e)
			}
			if max > 0 && len(e.Data) > max {
				t.Fatalf("data of %d bytes over limit %d", len(e.Data), max)
			}
			// Each LF in Data joins two data fields.
			if n := strings.Count(e.Data, "\n"); n > 0 && n >= bytes.Count(data, []byte("data")) {
				t.Fatalf("%d newlines in data from %d data fields", strings.Count(e.Data, "\n"), bytes.Count(data, []byte("data")))
			}
		}
		// The way the input is split into reads must not matter.
		for name, r := range map[string]io.Reader{
			"onebyte": iotest.OneByteReader(bytes.NewReader(data)),
			"half":    iotest.HalfReader(bytes.NewReader(data)),
		} {
			got := collect(t, r, max)
			if fmt.Sprint(got) != fmt.Sprint(whole) {
				t.Fatalf("%s reads differ from whole reads\n%s: %v\nwhole: %v", name, name, got, whole)
			}
		}
		// Events survive being written back out and parsed again.
		if max == 0 {
			again := collect(t, bytes.NewReader(encode(whole)), 0)
			if fmt.Sprint(again) != fmt.Sprint(whole) {
				t.Fatalf("round trip differs\nagain: %v\nfirst: %v", again, whole)
			}
		}
	})
}
