package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var memberSeeds = []string{
	`{}`,
	`{"a":1}`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"a":"q\"uote","b":"back\\slash\\","c":"\\\"","d":"}]{[,:"}`,
	`{"\u0069d":7,"me\u0074hod":"m","k\"ey":true,"\\":null}`,
	`{"n":-1.5e+10,"t":true,"f":false,"z":null,"e":[],"o":{}}`,
	`{"deep":[[{"a":[{"b":"]}"}]}],[]],"after":0}`,
	`{"dup":1,"dup":2}`,
	`{"u":"\ud83d\ude00 é \u00e9","raw":"日本"}`,
	`{"a":[1,2,3],"b":{"c":{"d":"e"}},"f":"g"}`,
}

// checkMembers compares objectMembers with encoding/json on a compact object.
func checkMembers(t *testing.T, obj []byte) {
	t.Helper()
	var want map[string]json.RawMessage
	if err := json.Unmarshal(obj, &want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	got, err := objectMembers(obj)
	if err != nil {
		t.Fatalf("objectMembers(%s): %v", obj, err)
	}
	if len(got) != len(want) {
		t.Fatalf("objectMembers(%s): %d members, want %d", obj, len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Fatalf("objectMembers(%s): member %q missing", obj, name)
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("objectMembers(%s)[%q] = %s, want %s", obj, name, g, w)
		}
		if cap(g) != len(g) {
			t.Fatalf("member %q can grow into the rest of the message", name)
		}
	}
}

func TestObjectMembers(t *testing.T) {
	for _, s := range memberSeeds {
		checkMembers(t, []byte(s))
	}
}

func FuzzObjectMembers(f *testing.F) {
	for _, s := range memberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.Trim(data, jsonSpace)
		if !json.Valid(data) || len(data) == 0 || data[0] != '{' {
			return
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			t.Fatal(err)
		}
		checkMembers(t, buf.Bytes())
	})
}

// TestParseLargeResultNotCopied: the result of a parsed message is a slice
// of Raw, so a large result is held once; appending to it leaves Raw intact.
func TestParseLargeResultNotCopied(t *testing.T) {
	text := strings.Repeat("x", 1<<20)
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + text + `"},"z":0}`))
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(m.Raw, []byte(`{"text"`))
	if start < 0 || &m.Result[0] != &m.Raw[start] {
		t.Fatal("Result is a copy, not a slice of Raw")
	}
	raw := string(m.Raw)
	_ = append(m.Result, "garbage"...)
	if string(m.Raw) != raw {
		t.Fatal("appending to Result changed Raw")
	}
	allocs := testing.AllocsPerRun(5, func() {
		Parse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + text + `"}}`))
	})
	if allocs > 40 {
		t.Errorf("Parse made %.0f allocations", allocs)
	}
}
