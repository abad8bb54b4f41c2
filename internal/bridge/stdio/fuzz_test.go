package stdio

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// modelLines is the reference behaviour of ReadLine: split on LF, drop one CR
// before each LF, skip blank lines, report lines over max (when max > 0).
func modelLines(data []byte, max int) (lines [][]byte, tooLong []int) {
	segs := bytes.Split(data, []byte("\n"))
	for i, s := range segs {
		last := i == len(segs)-1
		if last && len(s) == 0 {
			break
		}
		if !last {
			s = bytes.TrimSuffix(s, []byte("\r"))
		}
		if max > 0 && len(s) > max {
			tooLong = append(tooLong, len(lines))
			lines = append(lines, nil)
			continue
		}
		if len(bytes.TrimSpace(s)) == 0 {
			continue
		}
		lines = append(lines, s)
	}
	return lines, tooLong
}

func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":2}\r\n"), uint16(0))
	f.Add([]byte("a\n\n\r\nb"), uint16(0))
	f.Add([]byte("short\nthis line is too long\nok\n"), uint16(5))
	f.Add([]byte("x\r\r\n\r"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, m uint16) {
		max := int(m)
		want, _ := modelLines(data, max)
		for _, mode := range []string{"whole", "onebyte"} {
			var src io.Reader = bytes.NewReader(data)
			if mode == "onebyte" {
				src = iotest.OneByteReader(src)
			}
			r := NewReader(src, max)
			var got [][]byte
			for {
				line, err := r.ReadLine()
				if err == io.EOF {
					break
				}
				if errors.Is(err, ErrLineTooLong) {
					if max <= 0 {
						t.Fatalf("%s: ErrLineTooLong without a limit", mode)
					}
					got = append(got, nil)
					continue
				}
				if err != nil {
					t.Fatalf("%s: unexpected error %v", mode, err)
				}
				if line == nil {
					t.Fatalf("%s: nil line without error", mode)
				}
				if bytes.IndexByte(line, '\n') >= 0 {
					t.Fatalf("%s: line contains LF: %q", mode, line)
				}
				if max > 0 && len(line) > max {
					t.Fatalf("%s: line of %d bytes over limit %d", mode, len(line), max)
				}
				if len(bytes.TrimSpace(line)) == 0 {
					t.Fatalf("%s: blank line returned: %q", mode, line)
				}
				got = append(got, line)
				if len(got) > len(data)+1 {
					t.Fatalf("%s: more lines than input bytes", mode)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d lines, want %d\ngot  %q\nwant %q", mode, len(got), len(want), got, want)
			}
			for i := range want {
				if (want[i] == nil) != (got[i] == nil) || !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%s: line %d = %q, want %q", mode, i, got[i], want[i])
				}
			}
			// Concatenation property: without CRs and without a limit, the
			// lines joined by LF are exactly the non-blank pieces of the input.
			if max == 0 && bytes.IndexByte(data, '\r') < 0 {
				var pieces [][]byte
				for _, p := range bytes.Split(data, []byte("\n")) {
					if len(bytes.TrimSpace(p)) > 0 {
						pieces = append(pieces, p)
					}
				}
				if !bytes.Equal(bytes.Join(got, []byte("\n")), bytes.Join(pieces, []byte("\n"))) {
					t.Fatalf("%s: joined lines differ from the input's pieces", mode)
				}
			}
		}
	})
}
