package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// readAll reads lines until an error and returns them with that error.
func readAll(r *Reader) ([]string, error) {
	var lines []string
	for {
		line, err := r.ReadLine()
		if err != nil {
			return lines, err
		}
		lines = append(lines, string(line))
	}
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"lf", "a\nb\n", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"mixed", "a\r\nb\nc\r\n", []string{"a", "b", "c"}},
		{"final line without newline", "a\nb", []string{"a", "b"}},
		{"final line without newline crlf", "a\r\nb", []string{"a", "b"}},
		{"only newline", "\n", nil},
		{"blank lines skipped", "\n\n{}\n\r\n  \t\n\r\n{\"a\":1}\n\n", []string{"{}", `{"a":1}`}},
		{"whitespace-only final line", "{}\n   ", []string{"{}"}},
		{"inner spaces kept", " {} \n", []string{" {} "}},
		{"lone CR is not a terminator", "a\rb\n", []string{"a\rb"}},
		{"only one CR stripped", "a\r\r\n", []string{"a\r"}},
		{"json", `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}},
	}
	for _, tt := range tests {
		for _, mode := range []string{"whole", "onebyte"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				var src io.Reader = strings.NewReader(tt.in)
				if mode == "onebyte" {
					src = iotest.OneByteReader(src)
				}
				got, err := readAll(NewReader(src, 0))
				if err != io.EOF {
					t.Fatalf("final error = %v, want io.EOF", err)
				}
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
					t.Fatalf("lines = %q, want %q", got, tt.want)
				}
			})
		}
	}
}

func TestReadLineOwnedByCaller(t *testing.T) {
	r := NewReader(strings.NewReader("first\nsecond\n"), 0)
	a, err := r.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != "first" || string(b) != "second" {
		t.Fatalf("got %q, %q: an earlier line was overwritten", a, b)
	}
}

func TestReadLineHugeLineNoLimit(t *testing.T) {
	const size = 50 << 20
	big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	big[0], big[len(big)-1] = '{', '}'
	in := make([]byte, 0, size+64)
	in = append(in, big...)
	in = append(in, "\r\n{}\n"...)
	r := NewReader(bytes.NewReader(in), 0)
	line, err := r.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(line, big) {
		t.Fatalf("50 MB line not intact: got %d bytes", len(line))
	}
	if line, err := r.ReadLine(); err != nil || string(line) != "{}" {
		t.Fatalf("next line = %q, %v", line, err)
	}
	if _, err := r.ReadLine(); err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
}

func TestReadLineLimit(t *testing.T) {
	const bufSize = 64 << 10 // the Reader's buffer: lines longer than this arrive in pieces
	tests := []struct {
		name    string
		max     int
		line    string // content, without terminator
		eol     string // terminator ("" = end of input)
		tooLong bool
	}{
		{"exactly max lf", 10, strings.Repeat("x", 10), "\n", false},
		{"exactly max crlf", 10, strings.Repeat("x", 10), "\r\n", false},
		{"exactly max eof", 10, strings.Repeat("x", 10), "", false},
		{"max+1 lf", 10, strings.Repeat("x", 11), "\n", true},
		{"max+1 crlf", 10, strings.Repeat("x", 11), "\r\n", true},
		{"max+1 eof", 10, strings.Repeat("x", 11), "", true},
		{"max+2 eof", 10, strings.Repeat("x", 12), "", true},
		{"content ends in CR", 10, strings.Repeat("x", 10) + "\r", "\r\n", true},
		{"much longer", 10, strings.Repeat("x", 5000), "\n", true},
		{"larger than buffer", 1000, strings.Repeat("x", 3*bufSize+17), "\n", true},
		{"larger than buffer crlf", 1000, strings.Repeat("x", 3*bufSize+17), "\r\n", true},
		{"max larger than buffer ok", 2*bufSize + 5, strings.Repeat("y", 2*bufSize+5), "\r\n", false},
		{"max larger than buffer too long", 2*bufSize + 5, strings.Repeat("y", 2*bufSize+6), "\r\n", true},
		// The buffer fills right after the CR of a CRLF: the CR must not be
		// counted against the limit.
		{"CR at buffer boundary ok", bufSize - 1, strings.Repeat("z", bufSize-1), "\r\n", false},
		{"CR at buffer boundary too long", bufSize - 2, strings.Repeat("z", bufSize-1), "\r\n", true},
		{"LF right after full buffer", bufSize, strings.Repeat("z", bufSize), "\n", false},
	}
	for _, tt := range tests {
		for _, mode := range []string{"whole", "onebyte"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				in := "first\n" + tt.line + tt.eol
				if tt.eol != "" {
					in += "\n\nnext line\r\nlast"
				}
				var src io.Reader = strings.NewReader(in)
				if mode == "onebyte" {
					src = iotest.OneByteReader(src)
				}
				r := NewReader(src, tt.max)
				if line, err := r.ReadLine(); err != nil || string(line) != "first" {
					t.Fatalf("first line = %q, %v", line, err)
				}
				line, err := r.ReadLine()
				if tt.tooLong {
					if !errors.Is(err, ErrLineTooLong) {
						t.Fatalf("err = %v (line of %d bytes), want ErrLineTooLong", err, len(line))
					}
					if line != nil {
						t.Fatalf("line returned with the error: %d bytes", len(line))
					}
				} else if err != nil || string(line) != tt.line {
					t.Fatalf("line = %d bytes, %v; want %d bytes", len(line), err, len(tt.line))
				}
				if tt.eol == "" {
					if _, err := r.ReadLine(); err != io.EOF {
						t.Fatalf("after last line: err = %v, want EOF", err)
					}
					return
				}
				rest, err := readAll(r)
				if err != io.EOF || fmt.Sprint(rest) != "[next line last]" {
					t.Fatalf("lines after = %q, %v", rest, err)
				}
			})
		}
	}
}

func TestReadLineLimitRepeated(t *testing.T) {
	// Several oversized lines in a row, each followed by a good one.
	var in strings.Builder
	for i := range 5 {
		in.WriteString(strings.Repeat("!", 100*(i+1)) + "\n")
		fmt.Fprintf(&in, "ok%d\n", i)
	}
	r := NewReader(strings.NewReader(in.String()), 50)
	for i := range 5 {
		if _, err := r.ReadLine(); !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("line %d: err = %v, want ErrLineTooLong", i, err)
		}
		line, err := r.ReadLine()
		if err != nil || string(line) != fmt.Sprintf("ok%d", i) {
			t.Fatalf("line after oversized %d = %q, %v", i, line, err)
		}
	}
	if _, err := r.ReadLine(); err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
}

func TestReadLineReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)), 0)
	if line, err := r.ReadLine(); err != nil || string(line) != "a" {
		t.Fatalf("line = %q, %v", line, err)
	}
	if _, err := r.ReadLine(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

func TestWriteRefusesNewline(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, msg := range []string{"{\n}", "\n", "{}\n", "{}\r\n"} {
		if err := w.Write([]byte(msg)); err == nil {
			t.Errorf("Write(%q) succeeded", msg)
		}
	}
	if buf.Len() != 0 {
		t.Fatalf("refused messages wrote %q", buf.String())
	}
	if err := w.Write([]byte(`{"a":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "{\"a\":\"b\"}\n" {
		t.Fatalf("wrote %q", buf.String())
	}
}

// countingWriter records every Write call it receives and checks that no two
// calls overlap in time.
type countingWriter struct {
	mu      sync.Mutex
	busy    bool
	calls   int
	buf     bytes.Buffer
	overlap bool
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.busy {
		c.overlap = true
	}
	c.busy = true
	c.mu.Unlock()
	// Write in two halves so that interleaving, if the Writer allowed it,
	// would show up in the output.
	half := len(p) / 2
	c.mu.Lock()
	c.buf.Write(p[:half])
	c.mu.Unlock()
	c.mu.Lock()
	c.buf.Write(p[half:])
	c.calls++
	c.busy = false
	c.mu.Unlock()
	return len(p), nil
}

func TestWriteConcurrent(t *testing.T) {
	const writers, perWriter = 32, 200
	cw := &countingWriter{}
	w := NewWriter(cw)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				pad := strings.Repeat("x", (g*7+i*13)%3000)
				msg := fmt.Sprintf(`{"g":%d,"i":%d,"pad":"%s"}`, g, i, pad)
				if err := w.Write([]byte(msg)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if cw.overlap {
		t.Fatal("two Write calls reached the sink at the same time")
	}
	if cw.calls != writers*perWriter {
		t.Fatalf("sink got %d write calls, want one per message (%d)", cw.calls, writers*perWriter)
	}
	// Every line must be one whole message, and each writer's messages arrive in order.
	next := make([]int, writers)
	r := NewReader(&cw.buf, 0)
	n := 0
	for {
		line, err := r.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var g, i int
		var pad string
		if _, err := fmt.Sscanf(string(line), `{"g":%d,"i":%d,"pad":%s`, &g, &i, &pad); err != nil {
			t.Fatalf("line %d is not a whole message: %.80q", n, line)
		}
		want := fmt.Sprintf(`{"g":%d,"i":%d,"pad":"%s"}`, g, i, strings.Repeat("x", (g*7+i*13)%3000))
		if string(line) != want {
			t.Fatalf("line %d interleaved: %.80q", n, line)
		}
		if i != next[g] {
			t.Fatalf("writer %d: message %d arrived, want %d", g, i, next[g])
		}
		next[g]++
		n++
	}
	if n != writers*perWriter {
		t.Fatalf("read %d messages, want %d", n, writers*perWriter)
	}
}

func TestWriteError(t *testing.T) {
	w := NewWriter(errWriter{})
	if err := w.Write([]byte("{}")); err == nil || err.Error() != "closed" {
		t.Fatalf("err = %v, want the sink's error", err)
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriterReaderRoundTrip(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	msgs := []string{`{"id":1}`, strings.Repeat("a", 200<<10), `{"x":"\r"}`}
	go func() {
		for _, m := range msgs {
			if err := w.Write([]byte(m)); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	got, err := readAll(NewReader(bufio.NewReader(pr), 0))
	if err != io.EOF {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("got %d messages, want %d", len(got), len(msgs))
	}
	for i := range msgs {
		if got[i] != msgs[i] {
			t.Fatalf("message %d differs", i)
		}
	}
}

// TestWriteLargeWithoutCopy: a large message reaches the sink as the message
// itself (no copy) followed by its newline, with nothing interleaved.
func TestWriteLargeWithoutCopy(t *testing.T) {
	cw := &countingWriter{}
	w := NewWriter(cw)
	var wg sync.WaitGroup
	big := []byte(`{"pad":"` + strings.Repeat("y", largeMessage) + `"}`)
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if err := w.Write(big); err != nil {
					t.Error(err)
				}
				if err := w.Write([]byte(`{"small":1}`)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if cw.overlap {
		t.Fatal("two Write calls reached the sink at the same time")
	}
	r := NewReader(&cw.buf, 0)
	bigs, smalls := 0, 0
	for {
		line, err := r.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.Equal(line, big):
			bigs++
		case string(line) == `{"small":1}`:
			smalls++
		default:
			t.Fatalf("interleaved line: %.80q", line)
		}
	}
	if bigs != 80 || smalls != 80 {
		t.Fatalf("read %d large and %d small messages, want 80 of each", bigs, smalls)
	}

	sink := &recordingWriter{}
	if err := NewWriter(sink).Write(big); err != nil {
		t.Fatal(err)
	}
	if len(sink.calls) != 2 || &sink.calls[0][0] != &big[0] || string(sink.calls[1]) != "\n" {
		t.Fatalf("large message written as %d calls, want the message itself then a newline", len(sink.calls))
	}
	if err := NewWriter(errWriter{}).Write(big); err == nil {
		t.Fatal("sink error on a large message not reported")
	}
}

type recordingWriter struct{ calls [][]byte }

func (r *recordingWriter) Write(p []byte) (int, error) {
	r.calls = append(r.calls, p)
	return len(p), nil
}
