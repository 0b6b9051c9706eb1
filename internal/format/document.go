package format

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// MaxDocumentBytes bounds a single-document file read into memory: such a
// layout is decoded whole, unlike line-oriented files.
const MaxDocumentBytes = 1 << 30

// ReadWhole reads the rest of a single-document file into memory, in one
// buffer of the file's size (Source.Size, when known) and within the
// document budget of ctx (WithDocumentBudget), which it holds until
// release is called: when the caller is done with the document and what it
// decoded from it. what names the format in errors ("atif").
func ReadWhole(ctx context.Context, r io.Reader, src Source, what string) (data []byte, release func(), err error) {
	if src.Size > MaxDocumentBytes {
		return nil, nil, Errorf(src, 0, "", "%s: document larger than %d bytes", what, MaxDocumentBytes)
	}
	release, err = hold(ctx, src, src.Size, false)
	if err != nil {
		return nil, nil, err
	}
	if m, ok := r.(*InMemory); ok {
		// The file is in memory already: its bytes are the document, as
		// they were the file's, valid until Normalize returns.
		if data = m.rest(); len(data) > MaxDocumentBytes {
			release()
			return nil, nil, Errorf(src, 0, "", "%s: document larger than %d bytes", what, MaxDocumentBytes)
		}
		return data, release, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, src.Size+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(r, MaxDocumentBytes+1))
	switch {
	case err != nil:
		err = Errorf(src, 0, "", "%s: read: %w", what, err)
	case buf.Len() > MaxDocumentBytes:
		err = Errorf(src, 0, "", "%s: document larger than %d bytes", what, MaxDocumentBytes)
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return buf.Bytes(), release, nil
}

// InMemory reads a file that was read whole into memory (ingest reads small
// files so), and lets ReadWhole take the unread bytes without copying them
// into a buffer of their own: that copy was most of what a small
// single-document file cost beyond its decoding. Like every file's bytes
// (Emit), they are reused once Normalize returns.
type InMemory struct {
	bytes.Reader
	data []byte
}

// NewInMemory returns a reader of data.
func NewInMemory(data []byte) *InMemory {
	m := &InMemory{data: data}
	m.Reader.Reset(data)
	return m
}

// rest returns the bytes not read yet and marks them read.
func (m *InMemory) rest() []byte {
	rest := m.data[len(m.data)-m.Len():]
	m.Reader.Reset(nil)
	return rest
}

// ReadDocument reads a whole single-document file (ReadWhole) and checks
// that it is valid JSON, returning it without a UTF-8 byte-order mark or
// surrounding space. A syntax error is located by line and column
// (DocumentError).
func ReadDocument(ctx context.Context, r io.Reader, src Source, what string) (data []byte, release func(), err error) {
	data, release, err = ReadWhole(ctx, r, src, what)
	if err != nil {
		return nil, nil, err
	}
	data = bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if !jsonx.Valid(data) {
		release()
		var v json.RawMessage
		err := jsonx.Unmarshal(data, &v)
		if err == nil {
			err = fmt.Errorf("invalid JSON")
		}
		return nil, nil, DocumentError(src, data, what, err)
	}
	return data, release, nil
}
