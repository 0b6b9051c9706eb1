package model

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Column describes one column of a relation in SQL terms.
type Column struct {
	Name     string
	SQLType  string // DuckDB type name
	Nullable bool
	// Since is the SchemaVersion that added the column: a store written at
	// an older version has no such column, and readers select NULL for it.
	Since int
	// FreeText marks a column of texts or JSON documents (messages, tool
	// arguments and results, extras): most of a normalized file's bytes,
	// never narrowed by range. A query that reads none of a relation's
	// free-text columns has a peripheral file normalized lean, with them
	// NULL (docs/architecture.md, "Lean relations").
	FreeText bool
}

// MissingIn reports whether a store written at schemaVersion lacks c.
func (c Column) MissingIn(schemaVersion int) bool { return schemaVersion < c.Since }

// Relation names of the Storyline and events tables.
const (
	RelRuns      = "runs"
	RelSteps     = "steps"
	RelToolCalls = "tool_calls"
	RelEvents    = "events"
)

// RowRelations are the relations whose rows come from sources; sources and
// projections are a Snapshot's metadata.
var RowRelations = []string{RelRuns, RelSteps, RelToolCalls, RelEvents}

// Schemas maps each row relation to its fixed column list, in order. The
// lists are derived from the struct tags so the Parquet writer, the SQL
// views and the docs can never disagree.
var Schemas = map[string][]Column{
	RelRuns:      columnsOf(Run{}),
	RelSteps:     columnsOf(Step{}),
	RelToolCalls: columnsOf(ToolCall{}),
	RelEvents:    columnsOf(Event{}),
}

var timeType = reflect.TypeOf(time.Time{})

func columnsOf(v any) []Column {
	t := reflect.TypeOf(v)
	cols := make([]Column, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("parquet")
		name := strings.Split(tag, ",")[0]
		ft, nullable := f.Type, false
		if ft.Kind() == reflect.Pointer {
			ft, nullable = ft.Elem(), true
		}
		var sqlType string
		switch {
		case ft == timeType:
			sqlType = "TIMESTAMPTZ"
		case ft.Kind() == reflect.String:
			sqlType = "VARCHAR"
		case ft.Kind() == reflect.Int64:
			sqlType = "BIGINT"
		case ft.Kind() == reflect.Float64:
			sqlType = "DOUBLE"
		case ft.Kind() == reflect.Bool:
			sqlType = "BOOLEAN"
		default:
			panic(fmt.Sprintf("model: field %s has no SQL mapping", f.Name))
		}
		since := 1
		if v := f.Tag.Get("since"); v != "" {
			if _, err := fmt.Sscan(v, &since); err != nil {
				panic(fmt.Sprintf("model: field %s: bad since tag %q", f.Name, v))
			}
		}
		cols = append(cols, Column{Name: name, SQLType: sqlType, Nullable: nullable, Since: since, FreeText: f.Tag.Get("text") == "free"})
	}
	return cols
}

// FreeTextColumns returns the names of a relation's free-text columns.
func FreeTextColumns(rel string) []string {
	var names []string
	for _, c := range Schemas[rel] {
		if c.FreeText {
			names = append(names, c.Name)
		}
	}
	return names
}

// ColumnNames returns the column names of a relation in order.
func ColumnNames(rel string) []string {
	cols := Schemas[rel]
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

// Values returns the fields of a row struct (Run, Step, SourceRow, ...) in
// column order, with nil pointers as nil and other pointers dereferenced.
func Values(row any) []any {
	v := reflect.Indirect(reflect.ValueOf(row))
	out := make([]any, v.NumField())
	for i := range out {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			f = f.Elem()
		}
		out[i] = f.Interface()
	}
	return out
}

// jsonColumns are the columns whose text is a JSON document: objects
// (extra, scores, payload), arrays (subagent_refs) or, for arguments, the
// producer's JSON text when it parses (arguments_valid). docs/query-model.md
// types them "VARCHAR (JSON)".
var jsonColumns = map[string]bool{"extra": true, "scores": true, "subagent_refs": true, "arguments": true, "payload": true}

// IsJSONColumn reports whether a model column of this name holds JSON
// text, so an output can write it as the JSON value it is.
func IsJSONColumn(name string) bool { return jsonColumns[name] }
