// Package jsonx is the one place that chooses the JSON codec used on hot
// paths (adapters, stores). Callers use these functions, never a codec
// package directly, so the choice can be re-measured and changed in one spot.
//
// Decoding uses github.com/goccy/go-json: on agent trajectories (deeply
// nested objects decoded into raw-message maps) it measured 3–30x faster
// than encoding/json with identical results on every golden file (see
// docs/performance.md); the adapters' fuzz targets run through it. Encoding
// stays on encoding/json, because goccy's MarshalNoEscape (v0.12.0) still
// escapes '<', '>' and '&', which would bloat and alter stored text.
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	gojson "github.com/goccy/go-json"
)

// RawMessage is a raw encoded JSON value.
type RawMessage = json.RawMessage

// Unmarshal decodes data into v.
func Unmarshal(data []byte, v any) error { return gojson.Unmarshal(data, v) }

// Valid reports whether data is valid JSON.
func Valid(data []byte) bool { return gojson.Valid(data) }

// Marshal encodes v without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeStrict decodes one JSON value of our own formats (manifests,
// pointers) into v: unknown fields and anything after the value are
// errors, because a file this build does not fully understand must not be
// half-read.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
