package bridge

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// batchVersion is the one protocol revision whose clients may send JSON-RPC
// batches (rule L13); 2025-06-18 removed them.
const batchVersion = "2025-03-26"

// batchReply collects the responses to one batch from the client and writes
// them as one array once every request in it is answered, as JSON-RPC
// requires. Upstream the batch's messages travel one per POST: the bridge
// never sends batches to the server.
type batchReply struct {
	r      *Relay
	mu     sync.Mutex
	got    [][]byte
	want   int
	sealed bool // want is known: every element has been dispatched
}

// add records one response.
func (b *batchReply) add(m *jsonrpc.Message) {
	b.mu.Lock()
	b.got = append(b.got, m.Bytes())
	done := b.sealed && len(b.got) == b.want
	b.mu.Unlock()
	if done {
		b.flush()
	}
}

// seal sets how many responses the batch needs, once all are dispatched
// (some may already be in).
func (b *batchReply) seal(want int) {
	b.mu.Lock()
	b.want, b.sealed = want, true
	done := len(b.got) == want && want > 0
	b.mu.Unlock()
	if done {
		b.flush()
	}
}

func (b *batchReply) flush() {
	b.mu.Lock()
	out := append([]byte{'['}, bytes.Join(b.got, []byte{','})...)
	b.mu.Unlock()
	out = append(out, ']')
	if err := b.r.out.Write(out); err != nil {
		b.r.outErr(err)
	}
}

// respond sends the response to one request: on stdout, or into its batch.
func (r *Relay) respond(b *batchReply, m *jsonrpc.Message) {
	if b != nil {
		b.add(m)
		return
	}
	r.write(m)
}

// handleBatch takes a JSON array from the client. Under 2025-03-26 its
// elements are relayed one by one and the responses go back as one array;
// under later revisions (or before initialize) a batch is an invalid request.
func (r *Relay) handleBatch(line []byte) {
	if pv := r.c.ProtocolVersion(); pv != batchVersion {
		msg := "batch requests are not supported: send one message per line"
		if pv != "" {
			msg = "batch requests are not supported in protocol version " + pv + ": send one message per line"
		}
		r.write(jsonrpc.NewError(nil, jsonrpc.CodeInvalidRequest, msg, nil))
		return
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		r.write(jsonrpc.NewError(nil, jsonrpc.CodeInvalidRequest, "invalid request: an empty or malformed batch", nil))
		return
	}
	b := &batchReply{r: r}
	want := 0
	for _, raw := range raws {
		m, err := jsonrpc.Parse(raw)
		if err != nil {
			want++
			b.add(jsonrpc.NewError(nil, jsonrpc.CodeInvalidRequest, "invalid request in batch: not a JSON-RPC message object", nil))
			continue
		}
		switch m.Kind() {
		case jsonrpc.KindRequest:
			want++
			if m.Method == "initialize" {
				b.add(jsonrpc.NewError(m.ID, jsonrpc.CodeInvalidRequest, "initialize cannot be part of a batch", nil))
				continue
			}
			r.startRequest(m, b)
		case jsonrpc.KindNotification:
			r.startNotification(m)
		case jsonrpc.KindResponse:
			r.startResponse(m)
		default:
			want++
			id := m.ID
			if string(id) == "null" {
				id = nil
			}
			b.add(jsonrpc.NewError(id, jsonrpc.CodeInvalidRequest, "invalid request in batch: not a JSON-RPC 2.0 request, notification or response", nil))
		}
	}
	b.seal(want)
}
