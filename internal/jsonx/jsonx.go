// Package jsonx is the one place that chooses the JSON codec used on hot
// paths (adapters, stores). Callers use these functions, never a codec
// package directly, so the choice can be re-measured and changed in one spot
// (see docs/performance.md).
package jsonx

import "encoding/json"

// RawMessage is a raw encoded JSON value.
type RawMessage = json.RawMessage

// Unmarshal decodes data into v.
func Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Marshal encodes v without HTML escaping, which would only bloat stored text.
func Marshal(v any) ([]byte, error) { return marshalNoEscape(v) }

// Valid reports whether data is valid JSON.
func Valid(data []byte) bool { return json.Valid(data) }
