package export

import (
	"bytes"
	"encoding/json"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

func jsonUnmarshal(text string, v any) error { return jsonx.Unmarshal([]byte(text), v) }

// rawJSON returns text as raw JSON when it is a JSON value of the wanted
// shape (first byte '{' or '['), else nil.
func rawJSON(text string, open byte) json.RawMessage {
	t := bytes.TrimSpace([]byte(text))
	if len(t) == 0 || t[0] != open || !jsonx.Valid(t) {
		return nil
	}
	return t
}

// textJSON returns s as a JSON string.
func textJSON(s string) json.RawMessage {
	b, _ := jsonx.Marshal(s) // a string always encodes
	return b
}
