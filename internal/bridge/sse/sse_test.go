package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// ev is an Event (or an error) in comparable form.
type ev struct {
	Type     string
	Data     string
	ID       string
	HasID    bool
	Retry    time.Duration
	HasRetry bool
	Err      string
}

func (e ev) String() string {
	if e.Err != "" {
		return "error(" + e.Err + ")"
	}
	return fmt.Sprintf("{type=%q data=%q id=%q/%v retry=%v/%v}", e.Type, e.Data, e.ID, e.HasID, e.Retry, e.HasRetry)
}

func toEv(e *Event) ev {
	return ev{Type: e.Type, Data: string(e.Data), ID: e.ID, HasID: e.HasID, Retry: e.Retry, HasRetry: e.HasRetry}
}

// collect reads events until io.EOF; other errors are recorded and reading
// goes on. A reader that never reaches EOF fails the test after a bound.
func collect(t testing.TB, r io.Reader, maxEvent int) []ev {
	t.Helper()
	sr := NewReader(r, maxEvent)
	var out []ev
	for range 100000 {
		e, err := sr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			if e != nil {
				t.Fatalf("event %v returned together with error %v", e, err)
			}
			out = append(out, ev{Err: err.Error()})
			if !errors.Is(err, ErrEventTooLarge) {
				return out
			}
			continue
		}
		if e == nil {
			t.Fatal("nil event without error")
		}
		if e.Data == nil {
			t.Fatal("Data is nil: want an empty, non-nil slice for an event without data")
		}
		out = append(out, toEv(e))
	}
	t.Fatal("no EOF after 100000 calls")
	return nil
}

// readers returns the ways the input is delivered: whole, one byte at a
// time, and in halves.
func readers(in string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":   func() io.Reader { return strings.NewReader(in) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"half":    func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
		"dataerr": func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
	}
}

var tooLarge = ev{Err: ErrEventTooLarge.Error()}

func msg(data string) ev { return ev{Data: data} }

func TestNext(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		maxEvent int
		want     []ev
	}{
		{"empty stream", "", 0, nil},
		{"lf", "data: a\n\n", 0, []ev{msg("a")}},
		{"crlf", "data: a\r\n\r\n", 0, []ev{msg("a")}},
		{"cr", "data: a\r\r", 0, []ev{msg("a")}},
		{"mixed endings", "data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\n\rdata: e\n\n", 0,
			[]ev{msg("a\nb\nc"), msg("d"), msg("e")}},
		{"cr then lf is one line end", "data: a\r\n\rdata: b\r\r\n\n", 0, []ev{msg("a"), msg("b")}},
		{"lf then cr are two line ends", "data: a\n\rdata: b\n\n", 0, []ev{msg("a"), msg("b")}},
		{"space after colon optional", "data:a\n\n", 0, []ev{msg("a")}},
		{"only one space stripped", "data:  a\n\n", 0, []ev{msg(" a")}},
		{"tab not stripped", "data:\ta\n\n", 0, []ev{msg("\ta")}},
		{"trailing space kept", "data: a \n\n", 0, []ev{msg("a ")}},
		{"colon in value", "data: a: b:c\n\n", 0, []ev{msg("a: b:c")}},
		{"multi-line data", "data: a\ndata: b\ndata:\ndata: c\n\n", 0, []ev{msg("a\nb\n\nc")}},
		{"empty data", "data:\n\n", 0, []ev{msg("")}},
		{"two empty data lines", "data\ndata\n\n", 0, []ev{msg("\n")}},
		{"field with no colon", "data\n\n", 0, []ev{msg("")}},
		{"field with no colon is whole name", "data x\n\n", 0, nil},
		{"comments skipped", ": hello\n:\n\n: ping\ndata: a\n: inside\ndata: b\n\n", 0, []ev{msg("a\nb")}},
		{"comment-only blocks skipped", ":a\n\n:b\n\n\n\ndata: x\n\n", 0, []ev{msg("x")}},
		{"event type", "event: endpoint\ndata: /messages\n\n", 0, []ev{{Type: "endpoint", Data: "/messages"}}},
		{"event type reset per event", "event: a\ndata: 1\n\ndata: 2\n\n", 0, []ev{{Type: "a", Data: "1"}, msg("2")}},
		{"last event field wins", "event: a\nevent: b\ndata: 1\n\n", 0, []ev{{Type: "b", Data: "1"}}},
		{"id", "id: 42\ndata: x\n\n", 0, []ev{{ID: "42", HasID: true, Data: "x"}}},
		{"id without space", "id:42\ndata: x\n\n", 0, []ev{{ID: "42", HasID: true, Data: "x"}}},
		{"id empty value", "id:\ndata: x\n\n", 0, []ev{{ID: "", HasID: true, Data: "x"}}},
		{"id no colon", "id\ndata: x\n\n", 0, []ev{{ID: "", HasID: true, Data: "x"}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", 0, []ev{msg("x")}},
		{"id with NUL keeps earlier id", "id: 1\nid: a\x00b\ndata: x\n\n", 0, []ev{{ID: "1", HasID: true, Data: "x"}}},
		{"id not carried to the next event", "id: 1\ndata: x\n\ndata: y\n\n", 0,
			[]ev{{ID: "1", HasID: true, Data: "x"}, msg("y")}},
		{"priming event", "id: 0\ndata:\n\n", 0, []ev{{ID: "0", HasID: true, Data: ""}}},
		{"priming event with retry", "id: abc\nretry: 3000\ndata:\n\n", 0,
			[]ev{{ID: "abc", HasID: true, Retry: 3 * time.Second, HasRetry: true, Data: ""}}},
		{"id only block", "id: 7\n\n", 0, []ev{{ID: "7", HasID: true, Data: ""}}},
		{"retry", "retry: 1500\n\n", 0, []ev{{Retry: 1500 * time.Millisecond, HasRetry: true, Data: ""}}},
		{"retry zero", "retry:0\ndata: x\n\n", 0, []ev{{HasRetry: true, Data: "x"}}},
		{"retry not digits ignored", "retry: 10x\ndata: x\n\n", 0, []ev{msg("x")}},
		{"retry negative ignored", "retry: -1\ndata: x\n\n", 0, []ev{msg("x")}},
		{"retry with plus ignored", "retry: +1\ndata: x\n\n", 0, []ev{msg("x")}},
		{"retry with two spaces ignored", "retry:  10\ndata: x\n\n", 0, []ev{msg("x")}},
		{"retry empty ignored", "retry:\ndata: x\n\n", 0, []ev{msg("x")}},
		{"retry overflow ignored", "retry: 99999999999999999999999\ndata: x\n\n", 0, []ev{msg("x")}},
		{"retry non-ascii digit ignored", "retry: \u0661\ndata: x\n\n", 0, []ev{msg("x")}},
		{"retry only bad value is no event", "retry: x\n\n", 0, nil},
		{"unknown fields ignored", "foo: bar\nData: no\nEVENT: no\ndata: x\n\n", 0, []ev{msg("x")}},
		{"unknown fields only is no event", "foo: bar\n\n", 0, nil},
		{"bom", "\xEF\xBB\xBFdata: a\n\n", 0, []ev{msg("a")}},
		{"bom then blank line", "\xEF\xBB\xBF\ndata: a\n\n", 0, []ev{msg("a")}},
		{"bom then comment", "\xEF\xBB\xBF: c\ndata: a\n\n", 0, []ev{msg("a")}},
		{"only one bom stripped", "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", 0, []ev{msg("b")}},
		{"bom later is data", "data: a\n\n\xEF\xBB\xBFdata: b\n\n", 0, []ev{msg("a")}},
		{"bom in value kept", "data: \xEF\xBB\xBFa\n\n", 0, []ev{msg("\xEF\xBB\xBFa")}},
		{"trailing event without blank line discarded", "data: a\n\ndata: b\n", 0, []ev{msg("a")}},
		{"trailing partial line discarded", "data: a\n\ndata: b", 0, []ev{msg("a")}},
		{"trailing cr only line end", "data: a\r", 0, nil},
		{"leading blank lines", "\n\r\n\r\ndata: a\n\n", 0, []ev{msg("a")}},
		{"nul and utf-8 in data", "data: \x00é\n\n", 0, []ev{msg("\x00é")}},
		{"json message", "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", 0,
			[]ev{{Type: "message", ID: "1", HasID: true, Data: `{"jsonrpc":"2.0","id":1,"result":{}}`}}},

		// maxEvent
		{"data at limit", "data: 12345\n\n", 5, []ev{msg("12345")}},
		{"data over limit", "data: 123456\n\ndata: ok\n\n", 5, []ev{tooLarge, msg("ok")}},
		{"joined data at limit", "data: 12\ndata: 12\n\n", 5, []ev{msg("12\n12")}},
		{"joined data over limit", "data: 12\ndata: 123\n\ndata: ok\n\n", 5, []ev{tooLarge, msg("ok")}},
		{"rest of oversized event skipped", "data: 123456\ndata: tail\nid: 9\n\nid: 1\ndata: ok\n\n", 5,
			[]ev{tooLarge, {ID: "1", HasID: true, Data: "ok"}}},
		{"oversized event at eof", "data: 123456\n\n", 5, []ev{tooLarge}},
		{"oversized event without end", "data: 123456\ndata: x\n", 5, []ev{tooLarge}},
		{"long line over limit", "data: " + strings.Repeat("x", 200) + "\r\ndata: tail\r\n\r\ndata: ok\r\n\r\n", 5,
			[]ev{tooLarge, msg("ok")}},
		{"long comment line over limit", ":" + strings.Repeat("x", 200) + "\n\ndata: ok\n\n", 5,
			[]ev{tooLarge, msg("ok")}},
		{"long line ends right at the next blank line", "data: " + strings.Repeat("x", 70) + "\n\ndata: ok\n\n", 5,
			[]ev{tooLarge, msg("ok")}},
		{"long line at eof", "data: " + strings.Repeat("x", 200), 5, []ev{tooLarge}},
		{"long id line", "id: " + strings.Repeat("1", 100) + "\ndata: x\n\ndata: ok\n\n", 5, []ev{tooLarge, msg("ok")}},
		{"two oversized events", "data: 123456\n\ndata: abcdef\n\ndata: ok\n\n", 5, []ev{tooLarge, tooLarge, msg("ok")}},
		{"limit larger than the read buffer ok", "data: " + strings.Repeat("x", 40000) + "\n\n", 40000,
			[]ev{msg(strings.Repeat("x", 40000))}},
		{"limit larger than the read buffer exceeded", "data: " + strings.Repeat("x", 40001) + "\n\ndata: ok\n\n", 40000,
			[]ev{tooLarge, msg("ok")}},
		{"line larger than the read buffer exceeded", ":" + strings.Repeat("x", 40065) + "\r\rdata: ok\r\r", 40000,
			[]ev{tooLarge, msg("ok")}},
		{"no limit", "data: " + strings.Repeat("x", 100000) + "\n\n", 0, []ev{msg(strings.Repeat("x", 100000))}},
	}
	for _, tt := range tests {
		for mode, mk := range readers(tt.in) {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				got := collect(t, mk(), tt.maxEvent)
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Fatalf("input %q\ngot  %v\nwant %v", tt.in, got, tt.want)
				}
			})
		}
	}
}

// TestCRAcrossReads delivers a CR at the end of one read and the LF in the
// next: the pair is one line end, not a line end and a blank line.
func TestCRAcrossReads(t *testing.T) {
	in := "data: a\r\ndata: b\r\n\r\nid: 1\r\ndata: c\r\n\r\n"
	for split := 1; split < len(in); split++ {
		r := io.MultiReader(strings.NewReader(in[:split]), strings.NewReader(in[split:]))
		got := collect(t, r, 0)
		want := []ev{msg("a\nb"), {ID: "1", HasID: true, Data: "c"}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("split at %d: got %v, want %v", split, got, want)
		}
	}
}

// TestDispatchWithoutLookahead proves an event ending in a lone CR is
// dispatched at once, without waiting for the next byte (which may be an LF,
// or may not come for a long time).
func TestDispatchWithoutLookahead(t *testing.T) {
	for _, tc := range []struct{ name, first, second string }{
		{"cr", "data: a\r\r", "data: b\r\r"},
		{"crlf then cr", "data: a\r\n\r", "\ndata: b\r\n\r\n"},
		{"lf", "data: a\n\n", "data: b\n\n"},
		{"cr after lf", "data: a\n\r", "data: b\n\r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pr.Close()
			r := NewReader(pr, 0)
			type res struct {
				e   *Event
				err error
			}
			results := make(chan res)
			next := func() {
				e, err := r.Next()
				results <- res{e, err}
			}
			wait := func(want string) {
				t.Helper()
				select {
				case got := <-results:
					if got.err != nil || string(got.e.Data) != want {
						t.Fatalf("Next = %v, %v; want data %q", got.e, got.err, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("event %q not dispatched: the parser waits for more input", want)
				}
			}
			go next()
			// io.Pipe's Write returns only when the reader has taken all bytes.
			if _, err := pw.Write([]byte(tc.first)); err != nil {
				t.Fatal(err)
			}
			wait("a")
			go next()
			if _, err := pw.Write([]byte(tc.second)); err != nil {
				t.Fatal(err)
			}
			wait("b")
			go next()
			pw.Close()
			select {
			case got := <-results:
				if got.err != io.EOF {
					t.Fatalf("after close: %v, %v", got.e, got.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no EOF after close")
			}
		})
	}
}

// TestDispatchOneBytePipe feeds a stream through a pipe one byte per write and
// checks that each event is available as soon as its final byte is written.
func TestDispatchOneBytePipe(t *testing.T) {
	in := "data: a\r\rid: 2\ndata: b\r\n\r\n: c\rdata: c\n\r"
	wantAfter := map[int]string{} // byte index -> event dispatched once it is written
	wantAfter[strings.Index(in, "\r\r")+1] = "a"
	wantAfter[strings.Index(in, "\r\n\r\n")+2] = "b"
	wantAfter[len(in)-1] = "c"

	pr, pw := io.Pipe()
	r := NewReader(iotest.OneByteReader(pr), 0)
	events := make(chan string, 10)
	go func() {
		for {
			e, err := r.Next()
			if err != nil {
				close(events)
				return
			}
			events <- string(e.Data)
		}
	}()
	for i := range len(in) {
		if _, err := pw.Write([]byte{in[i]}); err != nil {
			t.Fatal(err)
		}
		if want, ok := wantAfter[i]; ok {
			select {
			case got := <-events:
				if got != want {
					t.Fatalf("after byte %d: event %q, want %q", i, got, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("after byte %d: event %q not dispatched", i, want)
			}
		}
	}
	pw.Close()
	if e, ok := <-events; ok {
		t.Fatalf("extra event %q", e)
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), 0)
	if e, err := r.Next(); err != nil || string(e.Data) != "a" {
		t.Fatalf("first = %v, %v", e, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

func TestLargeEventNoLimit(t *testing.T) {
	big := bytes.Repeat([]byte("y"), 5<<20)
	in := append(append([]byte("data: "), big...), "\r\ndata: z\r\n\r\n"...)
	e, err := NewReader(bytes.NewReader(in), 0).Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Data) != len(big)+2 || !bytes.Equal(e.Data[:len(big)], big) || string(e.Data[len(big):]) != "\nz" {
		t.Fatalf("event data of %d bytes not intact", len(e.Data))
	}
}
