// Package query validates user SQL before it reaches a query engine and
// computes, for every reference to a Dataset relation, which sources
// (`_file_` values) can possibly contribute rows.
//
// It is wall #1 of the read-only sandbox: user SQL is parsed only through
// DuckDB's json_serialize_sql, the text passed as an argument, on an
// instance locked down before it sees any (a parser-only one, or the
// engine's sandboxed query instance: AnalyzeOn), and the resulting AST is
// walked completely. Wall #2 is the engine's own DuckDB sandbox
// (enable_external_access=false, allowed directories, locked
// configuration), which does not depend on this package. See docs/sql.md
// for the rules a user sees.
package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2" // also registers the "duckdb" driver

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// DefaultSchema is the schema name of the Dataset mounted by the positional
// form (`pchronicle query DATASET SQL`).
const DefaultSchema = "dataset"

// MaxSQLBytes bounds the SQL text accepted by Analyze.
const MaxSQLBytes = 1 << 20

// Relation names of every Dataset schema.
const (
	RelSources     = "sources"
	RelRuns        = model.RelRuns
	RelSteps       = model.RelSteps
	RelToolCalls   = model.RelToolCalls
	RelEvents      = model.RelEvents
	RelProjections = "projections"
)

// Relations lists the six relations of a Dataset schema.
var Relations = []string{RelSources, RelRuns, RelSteps, RelToolCalls, RelEvents, RelProjections}

// trajectory relations hold rows whose identity is only unique inside one
// source; joins between them must carry `_file_` equality (docs/sql.md).
var trajectory = map[string]bool{RelRuns: true, RelSteps: true, RelToolCalls: true, RelEvents: true}

func isRelation(name string) bool {
	for _, r := range Relations {
		if r == name {
			return true
		}
	}
	return false
}

// Kind is the kind of an accepted statement.
type Kind string

// Statement kinds.
const (
	KindSelect   Kind = "select"
	KindValues   Kind = "values"
	KindDescribe Kind = "describe" // DESCRIBE, SHOW TABLES, SHOW ALL TABLES, SHOW TABLES FROM x
)

// AnalyzeOptions tells Analyze which schemas exist.
type AnalyzeOptions struct {
	// Datasets are the mounted Dataset SQL aliases (schemas). Matching is
	// case-insensitive, as in DuckDB.
	Datasets []string
	// Default is true for the positional form: a Dataset is mounted as
	// DefaultSchema and unqualified relation names resolve to it. Setting
	// Default implies DefaultSchema among Datasets.
	Default bool
}

// TableRef is one base-table reference to a Dataset relation.
type TableRef struct {
	Dataset  string // lowercase SQL alias (DefaultSchema for unqualified names in the positional form)
	Relation string // one of Relations
	// Candidates says which sources this reference can read rows from. A
	// relation referenced several times must read the union of the
	// candidates of all its references (see Analysis.MayRead).
	Candidates FileFilter
	// Sessions is the same conservative filter over session_id: when its
	// Values are finite, every row this reference reads has one of those
	// session ids (point lookups read only those Storylines).
	Sessions FileFilter
}

// Analysis is the result of validating one statement.
type Analysis struct {
	Kind    Kind
	Explain bool // the statement is wrapped in EXPLAIN
	Analyze bool // EXPLAIN ANALYZE: the statement also runs
	// Refs lists every base-table reference to a Dataset relation, in the
	// order they appear in the SQL text.
	Refs []TableRef
	// Route holds what source routing may use (nil: the statement's shape
	// does not allow it).
	Route *RouteFacts
	text  *textReads // what it may read of free-text columns (ReadsFreeText)
}

// MayRead reports whether the source file can contribute rows to
// dataset.relation: the union over all references to that relation. A
// relation that is never referenced reads nothing.
func (a *Analysis) MayRead(dataset, relation, file string) bool {
	for _, r := range a.Refs {
		if r.Dataset == dataset && r.Relation == relation && r.Candidates.MayMatch(file) {
			return true
		}
	}
	return false
}

// SessionBound returns the session ids that every reference to
// dataset.relation is provably limited to, or nil when some reference is
// unbounded (or there is none).
func (a *Analysis) SessionBound(dataset, relation string) []string {
	var out []string
	found := false
	for _, r := range a.Refs {
		if r.Dataset != dataset || r.Relation != relation {
			continue
		}
		v, ok := r.Sessions.Values()
		if !ok {
			return nil
		}
		out, found = append(out, v...), true
	}
	if !found {
		return nil
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// setAdvice matches DuckDB's advice to change a setting ("Use \"SET
// max_expression_depth TO x\" to increase …", a "Possible solutions:" list
// of SET statements): user SQL may run no SET, so the advice only misleads.
var setAdvice = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)\s*(Use|Try) "?SET [^"]*"? to [^.]*\.|\s*Possible solutions:.*`)
})

// WithoutSetAdvice removes DuckDB's advice to run a SET statement from msg.
func WithoutSetAdvice(msg string) string {
	return setAdvice().ReplaceAllString(msg, "")
}

// ValidationError rejects user SQL; Msg names the offending construct.
type ValidationError struct{ Msg string }

func (e *ValidationError) Error() string { return "query rejected: " + e.Msg }

func reject(format string, args ...any) error {
	return &ValidationError{Msg: fmt.Sprintf(format, args...)}
}

const errOnlySelect = "only SELECT, VALUES, DESCRIBE and EXPLAIN statements are allowed"

// Parser owns a parser-only, in-memory DuckDB instance. It is safe for
// concurrent use; calls share one connection and parse one at a time
// (a parse takes well under a millisecond for ordinary queries).
type Parser struct {
	db *sql.DB
}

// parserMemory bounds the parser instance. A statement's syntax tree, as
// JSON, is ~200 times its text: 256 MB parses an IN list of 100,000 values;
// beyond that the statement is rejected, never the server's memory grown.
const parserMemory = "256MB"

// parserSetup locks the parser instance down before any user text reaches
// it. json_serialize_sql only parses, but if a future DuckDB ever binds, the
// instance still cannot read files, load extensions or change settings.
var parserSetup = []string{
	"SET autoinstall_known_extensions=false",
	"SET autoload_known_extensions=false",
	"SET enable_external_access=false",
	"SET threads=1",
	"SET memory_limit='" + parserMemory + "'",
	"SET lock_configuration=true",
}

// NewParser opens the parser-only DuckDB instance.
func NewParser() (*Parser, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("query: open parser instance: %w", err)
	}
	// One connection: settings are applied once and every later use sees them.
	db.SetMaxOpenConns(1)
	for _, stmt := range parserSetup {
		if _, err := db.Exec(stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("query: configure parser instance (%s): %w", stmt, err)
		}
	}
	return &Parser{db: db}, nil
}

// Close releases the parser instance.
func (p *Parser) Close() error { return p.db.Close() }

// Analyze validates sql and computes the candidate sources of every Dataset
// reference. A *ValidationError means the SQL is not allowed (or does not
// parse); other errors are internal.
func (p *Parser) Analyze(ctx context.Context, sql string, opts AnalyzeOptions) (*Analysis, error) {
	return AnalyzeOn(ctx, p.db, sql, opts)
}

// Rower runs a query that returns one row: a *sql.DB or *sql.Conn.
type Rower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// AnalyzeOn is Analyze with the parser of another DuckDB instance, reached
// through conn. That instance must be locked down at least as the parser's
// own is (parserSetup) before this is called: the query engine's sandboxed
// instance is, and a one-shot command parses on it instead of opening a
// second DuckDB only to parse (docs/sql.md).
func AnalyzeOn(ctx context.Context, conn Rower, sql string, opts AnalyzeOptions) (*Analysis, error) {
	if err := checkText(sql); err != nil {
		return nil, err
	}
	body, explain, analyze := splitExplain(sql)
	stmt, err := serialize(ctx, conn, body)
	if err != nil {
		return nil, err
	}
	res, err := newAnalyzer(opts).run(stmt)
	if err != nil {
		return nil, err
	}
	res.Explain, res.Analyze = explain, analyze
	res.text = freeTextReads(stmt)
	if !explain {
		res.Route = routeFacts(stmt, res.Refs)
	}
	return res, nil
}

// caret points at byte pos of sql as DuckDB's own errors do: the line,
// and a caret under the position.
func caret(sql string, pos int) string {
	if pos < 0 || pos > len(sql) {
		return ""
	}
	start := strings.LastIndexByte(sql[:pos], '\n') + 1
	end := strings.IndexByte(sql[pos:], '\n')
	if end < 0 {
		end = len(sql)
	} else {
		end += pos
	}
	prefix := fmt.Sprintf("LINE %d: ", strings.Count(sql[:start], "\n")+1)
	pad := utf8.RuneCountInString(prefix + sql[start:pos])
	return "\n\n" + prefix + sql[start:end] + "\n" + strings.Repeat(" ", pad) + "^"
}

// notSelect rejects a statement that is not a query, naming its kind and,
// for the usual reasons to write one, what does the job instead.
func notSelect(sql string) error {
	kind := strings.ToUpper(firstWord(sql))
	if strings.Contains(strings.ToUpper(sql), "PIVOT") && kind != "COPY" && kind != "EXPORT" {
		// DuckDB runs a PIVOT without an IN list as two statements: the
		// first makes a type of the values, which is a write.
		return reject("a PIVOT needs its IN list of values here, and must be inside FROM: SELECT * FROM (PIVOT runs ON status IN ('completed', 'failed') USING count(*))")
	}
	switch kind {
	case "COPY", "EXPORT":
		return reject("%s writes files; queries are read-only: to write a result to a file, use --format csv (or json, jsonl, markdown) > file, or pchronicle export for Storylines", kind)
	case "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "TRUNCATE", "MERGE":
		return reject("%s changes data; a Dataset is read-only: %s", kind, errOnlySelect)
	case "ATTACH", "DETACH", "INSTALL", "LOAD", "SET", "RESET", "PRAGMA", "CALL", "USE", "IMPORT", "CHECKPOINT", "VACUUM":
		return reject("%s changes the query's environment, which is fixed: %s", kind, errOnlySelect)
	case "", "SELECT", "WITH", "FROM", "VALUES", "TABLE":
		// A query that still is not one: a later statement of several.
		return reject("%s (found another kind of statement)", errOnlySelect)
	}
	return reject("%s is not allowed: %s", kind, errOnlySelect)
}

// firstWord is the statement's first keyword, after comments.
func firstWord(sql string) string {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n(")
		switch {
		case strings.HasPrefix(sql, "--"):
			if i := strings.IndexByte(sql, '\n'); i >= 0 {
				sql = sql[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(sql, "/*"):
			if i := strings.Index(sql, "*/"); i >= 0 {
				sql = sql[i+2:]
				continue
			}
			return ""
		}
		end := strings.IndexFunc(sql, func(r rune) bool { return !unicode.IsLetter(r) })
		if end < 0 {
			end = len(sql)
		}
		return sql[:end]
	}
}

// checkText rejects text whose bytes the C side could read differently from
// the Go side: a NUL would end the string early for C, and invalid UTF-8 is
// where lookalike tricks live.
func checkText(sql string) error {
	switch {
	case len(sql) > MaxSQLBytes:
		return reject("SQL text is longer than %d bytes", MaxSQLBytes)
	case strings.IndexByte(sql, 0) >= 0:
		return reject("SQL text contains a NUL byte")
	case !utf8.ValidString(sql):
		return reject("SQL text is not valid UTF-8")
	case strings.TrimSpace(sql) == "":
		return reject("empty SQL text")
	}
	return nil
}

// serialize returns the single statement's query node.
func serialize(ctx context.Context, conn Rower, body string) (map[string]any, error) {
	var text string
	err := conn.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", body).Scan(&text)
	var de *duckdb.Error
	if errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory {
		// DuckDB's advice (SET statements) is for its own user, not ours.
		return nil, reject("the statement is too large to analyze (%d bytes of SQL ran the parser out of memory): split it into smaller queries", len(body))
	}
	if err != nil {
		return nil, fmt.Errorf("query: parse: %w", err)
	}
	var out struct {
		Error      bool             `json:"error"`
		ErrorType  string           `json:"error_type"`
		ErrorMsg   string           `json:"error_message"`
		Position   string           `json:"position"`
		Statements []map[string]any `json:"statements"`
	}
	if err := jsonx.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("query: decode parser AST: %w", err)
	}
	if out.Error {
		if strings.Contains(out.ErrorMsg, "Only SELECT statements") {
			return nil, notSelect(body)
		}
		msg := WithoutSetAdvice(strings.TrimSpace(out.ErrorMsg))
		if pos, err := strconv.Atoi(out.Position); err == nil {
			msg += caret(body, pos)
		}
		return nil, reject("%s", msg)
	}
	switch len(out.Statements) {
	case 0:
		return nil, reject("no statement")
	case 1:
	default:
		return nil, reject("exactly one statement is allowed, found %d", len(out.Statements))
	}
	node, ok := out.Statements[0]["node"].(map[string]any)
	if !ok {
		return nil, errors.New("query: parser AST has no statement node")
	}
	return node, nil
}
