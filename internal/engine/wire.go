package engine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// The pipes between the engine and a query worker (worker.go) carry
// frames: a kind byte, the payload's length as a uvarint, the payload.
// Requests and answers other than rows are JSON; rows are the compact
// binary values below, which round-trip every Go value a result row holds
// after plainValue with its exact type (an int32 stays an int32), so that
// output is the same as reading DuckDB in process.

// Frame kinds.
const (
	// Engine to worker.
	frameOpen   byte = 'o' // workerOpen: start DuckDB
	frameExec   byte = 'x' // workerExec: run statements in order
	frameQuery  byte = 'q' // workerStatement: run a query, stream its rows
	frameCancel byte = 'z' // workerCancel: stop that query if it still runs
	// frameArrowQuery runs a query (workerStatement) whose result streams
	// as an Arrow IPC stream (arrow.go) in frameArrow frames.
	frameArrowQuery byte = 'a'
	// Worker to engine.
	frameOK      byte = 'k' // the request succeeded
	frameError   byte = 'e' // workerError: it failed
	frameColumns byte = 'c' // workerColumns: a query's result columns
	frameRows    byte = 'r' // a batch of rows (encodeRow values)
	frameDone    byte = 'd' // the last row was sent
	frameArrow   byte = 's' // the next bytes of an Arrow IPC stream
)

type workerOpen struct {
	V int `json:"v"`
	// DataLimit is the most memory the worker may map beyond what it maps
	// at its first query (0: unbounded); see dataLimit.
	DataLimit int64 `json:"data_limit"`
	// Config is the DSN DuckDB opens with (Limits.openConfig).
	Config string `json:"config"`
}

// workerExec runs statements in order, stopping at the first that fails
// (workerError.Statement names it): an instance's set-up is one round trip
// to the worker, not one per statement.
type workerExec struct {
	SQL []string `json:"sql"`
}

type workerStatement struct {
	SQL string `json:"sql"`
	// Args are a query's arguments: only strings, which is all the engine
	// binds (the SQL text it parses, query.AnalyzeOn).
	Args []string `json:"args,omitempty"`
}

// workerCancel names the query to stop by its number: queries are numbered
// from 1 in the order the engine sends them. A cancel is written while the
// engine may already be sending the next request, so it must not stop a
// query other than the one it was meant for.
type workerCancel struct {
	Query uint64 `json:"query"`
}

// workerError carries a DuckDB error with its type, so classify sees the
// same *duckdb.Error as in process.
type workerError struct {
	DuckDB bool   `json:"duckdb,omitempty"`
	Type   int    `json:"type,omitempty"`
	Msg    string `json:"msg"`
	// Statement is the 1-based position of the statement of a workerExec
	// that failed (0: the error is not a statement's).
	Statement int `json:"statement,omitempty"`
}

func (we workerError) err() error {
	var err error
	if we.DuckDB {
		err = &duckdb.Error{Type: duckdb.ErrorType(we.Type), Msg: we.Msg}
	} else {
		err = errors.New(we.Msg)
	}
	if we.Statement > 0 {
		return &statementError{index: we.Statement - 1, err: err}
	}
	return err
}

// statementError is the failure of one statement of a workerExec.
type statementError struct {
	index int // in workerExec.SQL
	err   error
}

func (e *statementError) Error() string { return e.err.Error() }
func (e *statementError) Unwrap() error { return e.err }

func newWorkerError(err error) workerError {
	var we workerError
	var se *statementError
	if errors.As(err, &se) {
		we.Statement, err = se.index+1, se.err
	}
	var de *duckdb.Error
	if errors.As(err, &de) {
		we.DuckDB, we.Type, we.Msg = true, int(de.Type), de.Msg
	} else {
		we.Msg = err.Error()
	}
	return we
}

type workerColumns struct {
	Names []string `json:"names"`
	Types []string `json:"types"`
}

// writeFrame writes one frame.
func writeFrame(w *bufio.Writer, kind byte, payload []byte) error {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = kind
	n := binary.PutUvarint(hdr[1:], uint64(len(payload)))
	if _, err := w.Write(hdr[:1+n]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// writeJSON writes a frame whose payload is v as JSON.
func writeJSON(w *bufio.Writer, kind byte, v any) error {
	data, err := jsonx.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(w, kind, data)
}

// errFrameTooLarge: a frame announces more bytes than its reader accepts.
var errFrameTooLarge = errors.New("frame larger than allowed")

// readFrame reads one frame of at most max payload bytes into buf (which
// it may grow) and returns its kind and payload.
func readFrame(r *bufio.Reader, buf []byte, max int64) (kind byte, payload []byte, err error) {
	kind, err = r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, noEOF(err)
	}
	if n > uint64(max) {
		return 0, nil, fmt.Errorf("%w: %d bytes", errFrameTooLarge, n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, noEOF(err)
	}
	return kind, buf, nil
}

// noEOF turns an end of stream inside a frame into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Value tags of the row encoding.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt8
	tagInt16
	tagInt32
	tagInt64
	tagUint8
	tagUint16
	tagUint32
	tagUint64
	tagFloat32
	tagFloat64
	tagString
	tagBytes
	tagTime
	tagList
	tagStruct     // map[string]any
	tagOrderedMap // duckdb.OrderedMap (MAP)
	tagUnion      // duckdb.Union
	tagBit        // duckdb.Bit
)

// appendValue appends the encoding of v, one of the values plainValue
// returns; any other type is an error (a test checks every DuckDB type).
func appendValue(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, tagNil), nil
	case bool:
		if t {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case int8:
		return binary.AppendVarint(append(b, tagInt8), int64(t)), nil
	case int16:
		return binary.AppendVarint(append(b, tagInt16), int64(t)), nil
	case int32:
		return binary.AppendVarint(append(b, tagInt32), int64(t)), nil
	case int64:
		return binary.AppendVarint(append(b, tagInt64), t), nil
	case uint8:
		return binary.AppendUvarint(append(b, tagUint8), uint64(t)), nil
	case uint16:
		return binary.AppendUvarint(append(b, tagUint16), uint64(t)), nil
	case uint32:
		return binary.AppendUvarint(append(b, tagUint32), uint64(t)), nil
	case uint64:
		return binary.AppendUvarint(append(b, tagUint64), t), nil
	case float32:
		return binary.LittleEndian.AppendUint32(append(b, tagFloat32), math.Float32bits(t)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat64), math.Float64bits(t)), nil
	case string:
		return append(binary.AppendUvarint(append(b, tagString), uint64(len(t))), t...), nil
	case []byte:
		return append(binary.AppendUvarint(append(b, tagBytes), uint64(len(t))), t...), nil
	case time.Time:
		data, err := t.MarshalBinary()
		if err != nil {
			return nil, err
		}
		return append(binary.AppendUvarint(append(b, tagTime), uint64(len(data))), data...), nil
	case []any:
		return appendValues(binary.AppendUvarint(append(b, tagList), uint64(len(t))), t)
	case map[string]any:
		b = binary.AppendUvarint(append(b, tagStruct), uint64(len(t)))
		for k, val := range t {
			b = append(binary.AppendUvarint(b, uint64(len(k))), k...)
			var err error
			if b, err = appendValue(b, val); err != nil {
				return nil, err
			}
		}
		return b, nil
	case duckdb.OrderedMap:
		b, err := appendValues(binary.AppendUvarint(append(b, tagOrderedMap), uint64(t.Len())), t.Keys())
		if err != nil {
			return nil, err
		}
		return appendValues(b, t.Values())
	case duckdb.Union:
		b = append(binary.AppendUvarint(append(b, tagUnion), uint64(len(t.Tag))), t.Tag...)
		return appendValue(b, t.Value)
	case duckdb.Bit:
		return append(binary.AppendUvarint(append(b, tagBit), uint64(len(t.Data))), t.Data...), nil
	}
	return nil, fmt.Errorf("a result value of type %T cannot be sent from the query worker", v)
}

func appendValues(b []byte, vals []any) ([]byte, error) {
	for _, v := range vals {
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// errBadValue: a rows frame does not decode.
var errBadValue = errors.New("malformed row value")

// valueReader decodes the values of one rows frame.
type valueReader struct {
	b     []byte
	depth int
}

// maxValueDepth bounds nesting (DuckDB nests far less).
const maxValueDepth = 256

func (r *valueReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, errBadValue
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *valueReader) varint() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, errBadValue
	}
	r.b = r.b[n:]
	return v, nil
}

// bytes returns the next length-prefixed bytes (aliasing the frame).
func (r *valueReader) bytes() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil || n > uint64(len(r.b)) {
		return nil, errBadValue
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, nil
}

// count reads an element count, which cannot exceed the bytes left (every
// element takes at least one).
func (r *valueReader) count() (int, error) {
	n, err := r.uvarint()
	if err != nil || n > uint64(len(r.b)) {
		return 0, errBadValue
	}
	return int(n), nil
}

func (r *valueReader) fixed(n int) ([]byte, error) {
	if len(r.b) < n {
		return nil, errBadValue
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, nil
}

func (r *valueReader) value() (any, error) {
	if len(r.b) == 0 {
		return nil, errBadValue
	}
	tag := r.b[0]
	r.b = r.b[1:]
	switch tag {
	case tagNil:
		return nil, nil
	case tagFalse:
		return false, nil
	case tagTrue:
		return true, nil
	case tagInt8, tagInt16, tagInt32, tagInt64:
		v, err := r.varint()
		if err != nil {
			return nil, err
		}
		return signed(tag, v)
	case tagUint8, tagUint16, tagUint32, tagUint64:
		v, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		return unsigned(tag, v)
	case tagFloat32:
		b, err := r.fixed(4)
		if err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case tagFloat64:
		b, err := r.fixed(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case tagString:
		b, err := r.bytes()
		return string(b), err
	case tagBytes, tagBit:
		b, err := r.bytes()
		if err != nil {
			return nil, err
		}
		b = append([]byte{}, b...)
		if tag == tagBit {
			return duckdb.Bit{Data: b}, nil
		}
		return b, nil
	case tagTime:
		b, err := r.bytes()
		if err != nil {
			return nil, err
		}
		var t time.Time
		if err := t.UnmarshalBinary(b); err != nil {
			return nil, errBadValue
		}
		return t, nil
	case tagList, tagStruct, tagOrderedMap, tagUnion:
		if r.depth++; r.depth > maxValueDepth {
			return nil, errBadValue
		}
		defer func() { r.depth-- }()
		return r.nested(tag)
	}
	return nil, errBadValue
}

func (r *valueReader) nested(tag byte) (any, error) {
	switch tag {
	case tagList:
		n, err := r.count()
		if err != nil {
			return nil, err
		}
		return r.values(n)
	case tagStruct:
		n, err := r.count()
		if err != nil {
			return nil, err
		}
		m := make(map[string]any, n)
		for range n {
			k, err := r.bytes()
			if err != nil {
				return nil, err
			}
			if m[string(k)], err = r.value(); err != nil {
				return nil, err
			}
		}
		return m, nil
	case tagOrderedMap:
		n, err := r.count()
		if err != nil {
			return nil, err
		}
		keys, err := r.values(n)
		if err != nil {
			return nil, err
		}
		vals, err := r.values(n)
		if err != nil {
			return nil, err
		}
		var m duckdb.OrderedMap
		for i, k := range keys {
			if !comparable(k) {
				return nil, errBadValue
			}
			m.Set(k, vals[i])
		}
		return m, nil
	default: // tagUnion
		name, err := r.bytes()
		if err != nil {
			return nil, err
		}
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		return duckdb.Union{Tag: string(name), Value: v}, nil
	}
}

// comparable reports whether k can be a map key (OrderedMap.Set compares
// keys with ==): lists, structs and maps cannot.
func comparable(k any) bool {
	switch k.(type) {
	case []any, []byte, map[string]any, duckdb.OrderedMap, duckdb.Union, duckdb.Bit:
		return false
	}
	return true
}

func (r *valueReader) values(n int) ([]any, error) {
	out := make([]any, n)
	for i := range out {
		var err error
		if out[i], err = r.value(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func signed(tag byte, v int64) (any, error) {
	switch {
	case tag == tagInt64:
		return v, nil
	case tag == tagInt32 && v == int64(int32(v)):
		return int32(v), nil
	case tag == tagInt16 && v == int64(int16(v)):
		return int16(v), nil
	case tag == tagInt8 && v == int64(int8(v)):
		return int8(v), nil
	}
	return nil, errBadValue
}

func unsigned(tag byte, v uint64) (any, error) {
	switch {
	case tag == tagUint64:
		return v, nil
	case tag == tagUint32 && v == uint64(uint32(v)):
		return uint32(v), nil
	case tag == tagUint16 && v == uint64(uint16(v)):
		return uint16(v), nil
	case tag == tagUint8 && v == uint64(uint8(v)):
		return uint8(v), nil
	}
	return nil, errBadValue
}
