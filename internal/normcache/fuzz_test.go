package normcache

import (
	"testing"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// FuzzManifest: a manifest on disk is untrusted (a crash, a full disk or a
// stray write may have left anything): decoding never panics, and whatever
// it accepts is a manifest a lookup can rely on — it encodes to a
// manifest that decodes and encodes to the same bytes.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"layout":2,"created_at":"2026-03-01T12:00:00Z","members":[{"key":"000102030405060708090a0b0c0d0e0f","file":"a.jsonl","format":"openai"}],` +
		`"owners":["a.jsonl"],"files":[{"relation":"runs","bytes":10,"xxh3":"` + digest([]byte("x"))[:32] + `"}]}`))
	f.Add([]byte(`{"layout":2,"created_at":"2026-03-01T12:00:00Z","members":[{"key":"000102030405060708090a0b0c0d0e0f","file":"c.json","format":"","warnings":["c.json: unrecognized"],"no_rows":true}],"owners":[],"files":[]}`))
	f.Add([]byte(`{"layout":2,"members":[],"owners":null,"files":null}`))
	f.Add([]byte(`{"layout":1}`))
	f.Add([]byte(`{"layout":2,"created_at":"2026-03-01T12:00:00Z","members":[{"key":"zz"}],"extra":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err != nil {
			return
		}
		again, err := jsonx.Marshal(m)
		if err != nil {
			t.Fatalf("an accepted manifest does not encode: %v", err)
		}
		m2, err := decodeManifest(again)
		if err != nil {
			t.Fatalf("an accepted manifest encodes to one that is refused: %v\n%s", err, again)
		}
		if third, _ := jsonx.Marshal(m2); string(third) != string(again) {
			t.Fatalf("round trip changed the manifest:\n%s\n%s", again, third)
		}
		for k := range m.members {
			if _, ok := m.member(k); !ok {
				t.Fatalf("member %s indexed but not found", k)
			}
		}
	})
}
