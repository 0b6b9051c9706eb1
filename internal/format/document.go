package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// MaxDocumentBytes bounds a single-document file read into memory: such a
// layout is decoded whole, unlike line-oriented files.
const MaxDocumentBytes = 1 << 30

// ReadDocument reads a whole single-document file and checks that it is
// valid JSON, returning it without a UTF-8 byte-order mark or surrounding
// space. what names the format in errors ("openhands trajectory"); a syntax
// error is located by line and column (DocumentError).
func ReadDocument(r io.Reader, src Source, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, Errorf(src, 0, "", "read: %w", err)
	}
	if len(data) > MaxDocumentBytes {
		return nil, Errorf(src, 0, "", "%s: document larger than %d bytes", what, MaxDocumentBytes)
	}
	data = bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if !jsonx.Valid(data) {
		var v json.RawMessage
		err := jsonx.Unmarshal(data, &v)
		if err == nil {
			err = fmt.Errorf("invalid JSON")
		}
		return nil, DocumentError(src, data, what, err)
	}
	return data, nil
}
