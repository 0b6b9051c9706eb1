package inspect

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// docScanner reads one JSON document from a stream value by value, so that
// a JSON log's samples array is held one element at a time, never whole.
// It finds where a value ends from its strings and nesting only, without
// validating: callers validate every value they keep. off is the offset of
// the next unread byte, line its 1-based line and lineStart the offset its
// line starts at, for error locations.
type docScanner struct {
	br        *bufio.Reader
	off       int64
	line      int64
	lineStart int64
}

// column is the 1-based column of the next unread byte.
func (s *docScanner) column() int64 { return s.off - s.lineStart + 1 }

// consumed accounts for b, the bytes just read.
func (s *docScanner) consumed(b []byte) {
	if k := bytes.LastIndexByte(b, '\n'); k >= 0 {
		s.line += int64(bytes.Count(b, []byte{'\n'}))
		s.lineStart = s.off + int64(k) + 1
	}
	s.off += int64(len(b))
}

var errSyntax = errors.New("invalid JSON")

// peek skips whitespace and returns the next byte without consuming it.
// The end of the stream is io.ErrUnexpectedEOF: a document never ends
// where a byte is expected.
func (s *docScanner) peek() (byte, error) {
	for {
		b, err := s.br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			s.discard(1)
		default:
			return b[0], nil
		}
	}
}

// next consumes the next non-space byte, which must be want.
func (s *docScanner) next(want byte) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("%w: expected %q, found %q", errSyntax, want, c)
	}
	s.discard(1)
	return nil
}

// discard consumes n buffered bytes.
func (s *docScanner) discard(n int) {
	b, _ := s.br.Peek(n)
	s.consumed(b)
	s.br.Discard(len(b))
}

// value consumes the value at the current position (after whitespace) and,
// when keep is set, appends its bytes to dst.
func (s *docScanner) value(dst []byte, keep bool) ([]byte, error) {
	if _, err := s.peek(); err != nil {
		return dst, err
	}
	var (
		depth          int
		started        bool
		inString       bool
		scalar         bool
		backslashes    int // consecutive backslashes that ended the previous chunk, inside a string
		end            = -1
		chunk          []byte
		consumeChunkAt = func(n int) {
			if keep {
				dst = append(dst, chunk[:n]...)
			}
			s.consumed(chunk[:n])
			s.br.Discard(n)
		}
	)
	for {
		if s.br.Buffered() == 0 {
			if _, err := s.br.Peek(1); err != nil {
				if err == io.EOF {
					if scalar { // a scalar may end the stream
						return dst, nil
					}
					err = io.ErrUnexpectedEOF
				}
				return dst, err
			}
		}
		chunk, _ = s.br.Peek(s.br.Buffered())
	scan:
		for i := 0; i < len(chunk); {
			if inString {
				// Jump to the next quote; it ends the string unless an odd
				// run of backslashes (possibly begun in an earlier chunk)
				// escapes it.
				k := bytes.IndexByte(chunk[i:], '"')
				if k < 0 {
					t := format.TrailingBackslashes(chunk[i:])
					if t == len(chunk)-i {
						backslashes += t
					} else {
						backslashes = t
					}
					break scan
				}
				q := i + k
				n := format.TrailingBackslashes(chunk[i:q])
				if n == q-i {
					n += backslashes
				}
				backslashes = 0
				i = q + 1
				if n%2 == 0 {
					inString = false
					if depth == 0 {
						end = i
						break scan
					}
				}
				continue
			}
			c := chunk[i]
			switch {
			case scalar:
				switch c {
				case ',', '}', ']', ' ', '\t', '\n', '\r':
					end = i
					break scan
				}
			case !started:
				started = true
				switch c {
				case '"':
					inString = true
				case '{', '[':
					depth = 1
				case '}', ']', ',', ':':
					return dst, fmt.Errorf("%w: expected a value, found %q", errSyntax, c)
				default:
					scalar = true
				}
			default:
				switch c {
				case '"':
					inString = true
				case '{', '[':
					depth++
				case '}', ']':
					depth--
					if depth == 0 {
						end = i + 1
						break scan
					}
				case '\n':
					i = jsonx.SpacesEnd(chunk, i+1)
					continue
				}
			}
			i++
		}
		if end >= 0 {
			consumeChunkAt(end)
			return dst, nil
		}
		consumeChunkAt(len(chunk))
	}
}
