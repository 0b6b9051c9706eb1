package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"

	"github.com/pchronicle/pchronicle/internal/columnar"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// The Parquet form of each export format (docs/cli.md, "export"): the same
// content as its JSONL, typed, one Parquet file.
//
//   - openai: one row per Storyline — dataset, _file_, session_id and
//     messages, a list of {role, content, reasoning_content, tool_calls
//     [{id, type, function {name, arguments}}], tool_call_id}: what a
//     Hugging Face `datasets` fine-tuning set loads. content is the text
//     (multimodal parts as their JSON array's text).
//   - canonical: one row per event, the columns of the events relation
//     (docs/query-model.md), payload as JSON.
//   - atif: one row per Storyline — dataset, _file_, session_id and the
//     ATIF document as JSON, since documents carry producer fields no
//     fixed schema names.
//
// Rows are encoded as JSON objects of the shape's schema and converted a
// batch at a time by arrow-go's JSON reader.

// jsonType marks a column as JSON text: Parquet's JSON logical type.
var jsonType, _ = extensions.NewJSONType(arrow.BinaryTypes.String)

func jsonField(name string, nullable bool) arrow.Field {
	return arrow.Field{Name: name, Type: jsonType, Nullable: nullable}
}

func str(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
}

var (
	identityFields = []arrow.Field{str("dataset"), str("_file_"), str("session_id")}
	toolCallType   = arrow.StructOf(str("id"), str("type"),
		arrow.Field{Name: "function", Type: arrow.StructOf(str("name"), str("arguments")), Nullable: true})
	messageType = arrow.StructOf(str("role"), str("content"), str("reasoning_content"),
		arrow.Field{Name: "tool_calls", Type: arrow.ListOf(toolCallType), Nullable: true}, str("tool_call_id"))

	parquetSchemas = map[string]*arrow.Schema{
		OpenAI: arrow.NewSchema(append(append([]arrow.Field{}, identityFields...),
			arrow.Field{Name: "messages", Type: arrow.ListOf(messageType)}), nil),
		ATIF: arrow.NewSchema(append(append([]arrow.Field{}, identityFields...), jsonField("document", false)), nil),
		Canonical: arrow.NewSchema([]arrow.Field{
			str("_file_"), str("event_id"), str("trace_id"), str("run_id"), str("session_id"), str("agent_id"),
			{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
			{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
			str("kind"), str("parent_event_id"), str("step_id"), str("tool_call_id"), jsonField("payload", false),
		}, nil),
	}
)

// parquetBatchRows is how many rows are converted into one record batch.
const parquetBatchRows = 1024

// parquetWriter collects a shape's rows as JSON lines and hands them to a
// Parquet writer a batch at a time.
type parquetWriter struct {
	format string
	schema *arrow.Schema
	used   map[string]int // canonical: sessions seen, as canonicalWriter
	buf    bytes.Buffer
	n      int
	pw     *columnar.ParquetWriter
}

// NewParquet returns a writer of format's Parquet form to w.
func NewParquet(format string, w io.Writer) (Writer, error) {
	schema, ok := parquetSchemas[format]
	if !ok {
		return nil, fmt.Errorf("unknown export format %q (want %v)", format, Formats)
	}
	pw, err := columnar.NewParquetWriter(w, schema)
	if err != nil {
		return nil, err
	}
	return &parquetWriter{format: format, schema: schema, used: map[string]int{}, pw: pw}, nil
}

func (p *parquetWriter) Write(dataset string, sl *model.Storyline) error {
	switch p.format {
	case OpenAI:
		var row struct {
			Dataset   string           `json:"dataset"`
			File      string           `json:"_file_"`
			SessionID string           `json:"session_id"`
			Messages  []parquetMessage `json:"messages"`
		}
		row.Dataset, row.File, row.SessionID = dataset, sl.Run.File, sl.Run.SessionID
		for _, m := range openAIChat(sl).Messages {
			row.Messages = append(row.Messages, parquetMessage{chatMessage: m, Content: contentText(m.Content)})
		}
		if row.Messages == nil {
			row.Messages = []parquetMessage{}
		}
		return p.add(row)
	case ATIF:
		doc, err := ATIFDocument(sl)
		if err != nil {
			return err
		}
		return p.add(map[string]any{"dataset": dataset, "_file_": sl.Run.File, "session_id": sl.Run.SessionID, "document": string(doc)})
	default:
		evs, err := CanonicalEvents(dataset, sl, exportedSession(p.used, sl.Run.SessionID))
		if err != nil {
			return err
		}
		for i := range evs {
			if err := p.add(&evs[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// parquetMessage is a chat message whose content is text.
type parquetMessage struct {
	chatMessage
	Content *string `json:"content"`
}

// contentText is a message's content as text: a JSON string's value, an
// array's JSON text, nil for null.
func contentText(raw json.RawMessage) *string {
	if string(raw) == "null" || len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	return &s
}

// add appends one row and converts a full batch.
func (p *parquetWriter) add(row any) error {
	b, err := jsonx.Marshal(row)
	if err != nil {
		return err
	}
	p.buf.Write(b)
	p.buf.WriteByte('\n')
	if p.n++; p.n >= parquetBatchRows {
		return p.flush()
	}
	return nil
}

func (p *parquetWriter) flush() error {
	if p.n == 0 {
		return nil
	}
	rd := array.NewJSONReader(&p.buf, p.schema, array.WithChunk(-1))
	defer rd.Release()
	for rd.Next() {
		if err := p.pw.Write(rd.RecordBatch()); err != nil {
			return fmt.Errorf("export as Parquet: %w", err)
		}
	}
	p.buf.Reset()
	p.n = 0
	if err := rd.Err(); err != nil {
		return fmt.Errorf("export as Parquet: %w", err)
	}
	return nil
}

// Close writes the last batch and the file's footer.
func (p *parquetWriter) Close() error {
	if err := p.flush(); err != nil {
		p.pw.Close(nil)
		return err
	}
	return p.pw.Close(nil)
}
