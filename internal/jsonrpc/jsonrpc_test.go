package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseKind(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		kind   Kind
		idKey  string
		method string
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, KindRequest, "1", "tools/list"},
		{"request with params", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}`, KindRequest, `"a"`, "tools/call"},
		{"request id 0", `{"jsonrpc":"2.0","id":0,"method":"ping"}`, KindRequest, "0", "ping"},
		{"request empty string id", `{"jsonrpc":"2.0","id":"","method":"ping"}`, KindRequest, `""`, "ping"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification, "", "notifications/initialized"},
		{"notification with params", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, KindNotification, "", "notifications/progress"},
		{"response with result", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, KindResponse, "1", ""},
		{"response with null result", `{"jsonrpc":"2.0","id":1,"result":null}`, KindResponse, "1", ""},
		{"response with error", `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`, KindResponse, `"x"`, ""},
		{"error response with id null", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, KindResponse, "null", ""},
		{"both result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, KindInvalid, "1", ""},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}`, KindInvalid, "1", ""},
		{"result without id", `{"jsonrpc":"2.0","result":{}}`, KindInvalid, "", ""},
		{"method with id null", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, KindInvalid, "null", "ping"},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, KindInvalid, "1", ""},
		{"empty object", `{}`, KindInvalid, "", ""},
		{"surrounding whitespace", " \r\n\t{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n", KindRequest, "2", "ping"},
		{"unknown members kept", `{"jsonrpc":"2.0","id":1,"method":"m","extra":[1,2]}`, KindRequest, "1", "m"},
		// Member names are case-sensitive: these are not the id or method.
		{"upper-case ID", `{"jsonrpc":"2.0","ID":1,"method":"ping"}`, KindNotification, "", "ping"},
		{"upper-case Method", `{"jsonrpc":"2.0","id":1,"Method":"ping"}`, KindInvalid, "1", ""},
		{"upper-case Result", `{"jsonrpc":"2.0","id":1,"Result":{}}`, KindInvalid, "1", ""},
		{"upper-case Error", `{"jsonrpc":"2.0","id":1,"ERROR":{"code":1,"message":"m"}}`, KindInvalid, "1", ""},
		{"exact name wins over other case", `{"jsonrpc":"2.0","Method":"a","method":"b","METHOD":"c","id":1}`, KindRequest, "1", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if k := m.Kind(); k != tt.kind {
				t.Errorf("Kind = %v, want %v", k, tt.kind)
			}
			if k := m.IDKey(); k != tt.idKey {
				t.Errorf("IDKey = %q, want %q", k, tt.idKey)
			}
			if m.Method != tt.method {
				t.Errorf("Method = %q, want %q", m.Method, tt.method)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		notObject bool
	}{
		{"empty", "", false},
		{"whitespace", " \n\t", false},
		{"invalid", `{"id":1,`, false},
		{"trailing garbage", `{"id":1} x`, false},
		{"two objects", `{"id":1}{"id":2}`, false},
		{"single quotes", `{'id':1}`, false},
		{"non-json whitespace before", "\u00a0{}", false},
		{"non-json whitespace after", "{}\u00a0", false},
		{"vertical tab", "\v{}", false},
		{"batch array", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, true},
		{"string", `"hello"`, true},
		{"number", `42`, true},
		{"null", `null`, true},
		{"true", `true`, true},
		{"wrong type method", `{"jsonrpc":"2.0","id":1,"method":5}`, false},
		{"wrong type error", `{"jsonrpc":"2.0","id":1,"error":"bad"}`, false},
		{"wrong type jsonrpc", `{"jsonrpc":2,"id":1,"method":"m"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.in, m)
			}
			if got := errors.Is(err, ErrNotObject); got != tt.notObject {
				t.Fatalf("errors.Is(%v, ErrNotObject) = %v, want %v", err, got, tt.notObject)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad params","data":{"field":"x"}},"params":[1]}`
	m, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code != CodeInvalidParams || m.Error.Message != "bad params" ||
		string(m.Error.Data) != `{"field":"x"}` || string(m.Params) != "[1]" || m.Result != nil {
		t.Fatalf("fields: %+v, error %+v", m, m.Error)
	}
	if got := m.Error.Error(); got != "jsonrpc error -32602: bad params" {
		t.Fatalf("Error() = %q", got)
	}
	// The input is not kept: changing it does not change the message.
	buf := []byte(`{"jsonrpc":"2.0","id":"abc","method":"m","params":{"k":"v"}}`)
	m, err = Parse(buf)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(m.Raw)
	for i := range buf {
		buf[i] = ' '
	}
	if string(m.ID) != `"abc"` || string(m.Params) != `{"k":"v"}` || string(m.Raw) != raw {
		t.Fatalf("message aliases its input: id %s params %s raw %s", m.ID, m.Params, m.Raw)
	}
}

func TestParseRawCompact(t *testing.T) {
	pretty := "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\n    \"content\": [\n      {\"type\": \"text\", \"text\": \"line one\\nline two\"}\n    ]\n  }\n}\n"
	m, err := Parse([]byte(pretty))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"line one\nline two"}]}}`
	if string(m.Raw) != want {
		t.Fatalf("Raw = %s\nwant  %s", m.Raw, want)
	}
	if bytes.ContainsAny(m.Raw, "\r\n") {
		t.Fatal("Raw contains a newline")
	}
	if !bytes.Equal(m.Bytes(), m.Raw) {
		t.Fatal("Bytes() differs from Raw")
	}
	again, err := Parse(m.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if again.Kind() != m.Kind() || again.IDKey() != m.IDKey() || !bytes.Equal(again.Raw, m.Raw) ||
		!jsonEqual(t, again.Result, m.Result) {
		t.Fatalf("re-parse differs: %+v vs %+v", again, m)
	}
	// Raw keeps the message as received: no re-encoding of member order or escapes.
	in := `{"method":"m","jsonrpc":"2.0","params":{"s":"<\u00e9>"}}`
	m, err = Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Raw) != in {
		t.Fatalf("Raw = %s, want %s", m.Raw, in)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestIDKey(t *testing.T) {
	same := [][]string{
		{"1", " 1 ", "\n1\t", "1.0", "1e0", "10E-1", "0.1e1"},
		{"-5", "-5.000", "-0.5e1"},
		{"0", "-0", "0.0", "0e5"},
		{`"1"`, ` "1" `, `"\u0031"`},
		{`"é"`, `"\u00e9"`, `"\u00E9"`},
		{`"<a&b>"`, `"\u003ca\u0026b\u003e"`},
		{`"a/b"`, `"a\/b"`},
		{`"\n"`, `"\u000a"`},
		{`"😀"`, `"\ud83d\ude00"`, `"\uD83D\uDE00"`},
		{"\"a&\xff\"", "\"a\\u0026\xff\""},
		{`"\ud800"`, `"\uD800"`},
		{`"\ud800x"`, `"\uD800\u0078"`},
		{`"\\\"\b\f\n\r\t\u0001"`, `"\u005c\u0022\u0008\u000c\u000a\u000d\u0009\u0001"`},
		{"9007199254740993"},
		{"null", " null "},
		{""},
	}
	keys := map[string]int{}
	for i, group := range same {
		first := IDKey(json.RawMessage(group[0]))
		for _, id := range group[1:] {
			if k := IDKey(json.RawMessage(id)); k != first {
				t.Errorf("IDKey(%s) = %q, want %q as for %s", id, k, first, group[0])
			}
		}
		if j, dup := keys[first]; dup {
			t.Errorf("ids %s and %s share key %q", same[j][0], group[0], first)
		}
		keys[first] = i
	}
	distinct := []string{"1", `"1"`, "1.5", "2", `"a"`, `"A"`, `" a"`, "12345678901234567890", "12345678901234567891", `"\ud800"`, `"\udc00"`, `"\ufffd"`, `"\ud800\ud800"`, `"\\ud800"`, "\"\xff\"", "\"\xfe\"", "true", "{}", "[]"}
	seen := map[string]string{}
	for _, id := range distinct {
		k := IDKey(json.RawMessage(id))
		if prev, dup := seen[k]; dup {
			t.Errorf("ids %s and %s share key %q", prev, id, k)
		}
		seen[k] = id
	}
	if got := IDKey(json.RawMessage(`"<a>"`)); got != `"<a>"` {
		t.Errorf("IDKey(\"<a>\") = %s, want it unescaped", got)
	}
	// A request id and the same id echoed by a peer give one key.
	req, err := Parse([]byte(`{"jsonrpc":"2.0","id":"caf\u00e9 <1>","method":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Parse([]byte(`{"jsonrpc":"2.0","id":"café \u003c1\u003e","result":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.IDKey() != resp.IDKey() {
		t.Fatalf("request key %q, response key %q", req.IDKey(), resp.IDKey())
	}
}

func TestNewError(t *testing.T) {
	for _, id := range []json.RawMessage{nil, {}} {
		m := NewError(id, CodeParseError, "Parse error", nil)
		want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`
		if got := string(m.Bytes()); got != want {
			t.Fatalf("NewError(%q) = %s, want %s", id, got, want)
		}
		if m.Kind() != KindResponse {
			t.Fatalf("Kind = %v", m.Kind())
		}
		back, err := Parse(m.Raw)
		if err != nil || back.Kind() != KindResponse || string(back.ID) != "null" || back.Error.Code != CodeParseError {
			t.Fatalf("re-parse: %+v, %v", back, err)
		}
	}
	m := NewError(json.RawMessage(`"r1"`), CodeInternalError, "boom", map[string]int{"n": 1})
	if got, want := string(m.Raw), `{"jsonrpc":"2.0","id":"r1","error":{"code":-32603,"message":"boom","data":{"n":1}}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	// Data that cannot be marshalled is left out rather than failing.
	m = NewError(json.RawMessage(`3`), CodeInternalError, "x", func() {})
	if got, want := string(m.Raw), `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"x"}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestConstructors(t *testing.T) {
	req, err := NewRequest(json.RawMessage("5"), "tools/call", map[string]string{"name": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(req.Raw), `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}`; got != want {
		t.Fatalf("request %s, want %s", got, want)
	}
	if req.Kind() != KindRequest {
		t.Fatalf("request kind %v", req.Kind())
	}
	n, err := NewNotification("notifications/initialized", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(n.Raw), `{"jsonrpc":"2.0","method":"notifications/initialized"}`; got != want {
		t.Fatalf("notification %s, want %s", got, want)
	}
	if n.Kind() != KindNotification {
		t.Fatalf("notification kind %v", n.Kind())
	}
	r, err := NewResult(json.RawMessage(`"a"`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.Raw), `{"jsonrpc":"2.0","id":"a","result":null}`; got != want {
		t.Fatalf("result %s, want %s", got, want)
	}
	if r.Kind() != KindResponse {
		t.Fatalf("result kind %v", r.Kind())
	}
	if _, err := NewRequest(json.RawMessage("1"), "m", func() {}); err == nil {
		t.Fatal("NewRequest with unmarshallable params succeeded")
	}
	if _, err := NewResult(json.RawMessage("1"), make(chan int)); err == nil {
		t.Fatal("NewResult with unmarshallable result succeeded")
	}
	// Bytes encodes a message built by hand, with the default version.
	m := &Message{ID: json.RawMessage("9"), Result: json.RawMessage(`{ "a" : 1 }`)}
	if got, want := string(m.Bytes()), `{"jsonrpc":"2.0","id":9,"result":{"a":1}}`; got != want {
		t.Fatalf("Bytes = %s, want %s", got, want)
	}
	bad := &Message{ID: json.RawMessage("{")}
	if b := bad.Bytes(); b != nil {
		t.Fatalf("Bytes of an unencodable message = %s", b)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindInvalid: "invalid", KindRequest: "request", KindNotification: "notification", KindResponse: "response", Kind(99): "invalid"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
	if !strings.Contains(ErrNotObject.Error(), "object") {
		t.Error(ErrNotObject)
	}
}
