package cli

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// headerList is a repeatable --header flag.
type headerList []string

func (h *headerList) String() string     { return fmt.Sprintf("%d headers", len(*h)) }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// parseHeader splits "Name: value", refusing what HTTP would refuse.
func parseHeader(s string) (string, string, error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", "", fmt.Errorf("invalid header %q: want \"Name: value\"", redactHeaderArg(s))
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return "", "", fmt.Errorf("invalid header name %q", name)
		}
	}
	value = strings.TrimSpace(value)
	if strings.ContainsAny(value, "\r\n\x00") {
		return "", "", fmt.Errorf("invalid value for header %s: contains a line break", name)
	}
	return http.CanonicalHeaderKey(name), value, nil
}

// redactHeaderArg shows a malformed header argument without its value: it may
// be a token pasted with the wrong separator.
func redactHeaderArg(s string) string {
	if len(s) > 12 {
		return s[:4] + "…"
	}
	return s
}

// readHeaderFile reads "Name: value" lines (blank lines and # comments
// skipped), so secrets need not appear in the process list.
func readHeaderFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading header file: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, _, err := parseHeader(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading header file: %w", err)
	}
	return out, nil
}
