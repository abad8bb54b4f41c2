package jsonrpc

import (
	"bytes"
	"testing"
)

// TestParseOwnedAliasesCompactInput: a compact message is not copied; a
// pretty one is compacted as Parse does.
func TestParseOwnedAliasesCompactInput(t *testing.T) {
	compact := []byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"a b\n"}}`)
	m, err := ParseOwned(compact)
	if err != nil {
		t.Fatal(err)
	}
	if &m.Raw[0] != &compact[0] {
		t.Error("compact input was copied")
	}
	if cap(m.Raw) != len(m.Raw) {
		t.Error("Raw's capacity reaches past the message")
	}
	pretty := []byte("{ \"jsonrpc\": \"2.0\",\n \"id\": 1, \"result\": {\"text\": \"a b\"} }")
	m, err = ParseOwned(pretty)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Raw, []byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"a b"}}`)) {
		t.Errorf("pretty input: Raw = %s", m.Raw)
	}
	for _, in := range []string{`{"a":"\" "}`, `{"a":"\\"}`, `{"a":"x"} `, "\t{\"a\":1}"} {
		want, err1 := Parse([]byte(in))
		got, err2 := ParseOwned([]byte(in))
		if (err1 == nil) != (err2 == nil) || (err1 == nil && !bytes.Equal(want.Raw, got.Raw)) {
			t.Errorf("%q: Parse %q/%v, ParseOwned %q/%v", in, want, err1, got, err2)
		}
	}
}
