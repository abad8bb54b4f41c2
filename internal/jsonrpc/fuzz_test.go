package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	f.Add([]byte("{\n \"jsonrpc\": \"2.0\",\n \"id\": \"caf\\u00e9\",\n \"result\": null\n}"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":[1]}}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != nil {
				t.Fatal("message returned with an error")
			}
			return
		}
		if !json.Valid(m.Raw) {
			t.Fatalf("Raw is not valid JSON: %q", m.Raw)
		}
		if bytes.ContainsAny(m.Raw, "\r\n") {
			t.Fatalf("Raw contains a line break: %q", m.Raw)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil || !bytes.Equal(compact.Bytes(), m.Raw) {
			t.Fatalf("Raw %q is not the compact input (%v)", m.Raw, err)
		}
		owned, err := ParseOwned(bytes.Clone(data))
		if err != nil {
			t.Fatalf("ParseOwned refused what Parse accepted: %v", err)
		}
		if !bytes.Equal(owned.Raw, m.Raw) || owned.Kind() != m.Kind() || owned.IDKey() != m.IDKey() ||
			!bytes.Equal(owned.Result, m.Result) || !bytes.Equal(owned.Params, m.Params) {
			t.Fatalf("ParseOwned differs from Parse: %q vs %q", owned.Raw, m.Raw)
		}
		again, err := Parse(m.Raw)
		if err != nil {
			t.Fatalf("re-parsing Raw: %v", err)
		}
		if again.Kind() != m.Kind() || again.IDKey() != m.IDKey() || again.Method != m.Method {
			t.Fatalf("re-parse differs: kind %v/%v key %q/%q method %q/%q",
				again.Kind(), m.Kind(), again.IDKey(), m.IDKey(), again.Method, m.Method)
		}
		if !bytes.Equal(again.Raw, m.Raw) {
			t.Fatalf("compacting is not idempotent: %q then %q", m.Raw, again.Raw)
		}
		// A message rebuilt from its decoded fields keeps its kind and id.
		again.Raw = nil
		enc := again.Bytes()
		if enc == nil {
			t.Fatalf("cannot re-encode %q", m.Raw)
		}
		re, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-encoded message %q does not parse: %v", enc, err)
		}
		if re.Kind() != m.Kind() || re.IDKey() != m.IDKey() {
			t.Fatalf("re-encoding changed kind %v->%v or key %q->%q", m.Kind(), re.Kind(), m.IDKey(), re.IDKey())
		}
		// A peer that decodes the id and encodes it again (escaping HTML
		// characters, as Go does) is matched by the same key.
		var id any
		if len(m.ID) > 0 && json.Unmarshal(m.ID, &id) == nil {
			if s, ok := id.(string); ok {
				echoed, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				if k := IDKey(echoed); k != m.IDKey() && !bytes.ContainsRune([]byte(s), '\uFFFD') {
					t.Fatalf("id %s echoed as %s: key %q, want %q", m.ID, echoed, k, m.IDKey())
				}
			}
		}
		_ = m.Kind().String()
	})
}
