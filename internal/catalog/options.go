package catalog

import (
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// Error policies for candidate sources (spec §8).
const (
	ErrorsStrict = "strict" // any bad candidate fails the Snapshot build
	ErrorsReport = "report" // a bad candidate becomes a sources row with status error
)

// Options are every limit of discovery, resolution and query execution, in
// one place. Each field's `opt` tag is its setting name (the CLI flag is the
// same name with '-' for '_'), `default` its default and `help` its one-line
// description; Describe lists them for --help and docs, and a test checks
// that every one is documented.
type Options struct {
	Errors            string `opt:"errors" default:"strict" help:"candidate error policy: strict fails the build, report keeps a bad candidate as a sources row with status error"`
	MaxFiles          int    `opt:"max_files" default:"100000" help:"most candidate sources one Dataset may hold; the walk fails as soon as one more is seen"`
	MaxEntries        int    `opt:"max_entries" default:"1000000" help:"most directory entries or listed objects one Dataset walk may visit"`
	MaxDetectionBytes int64  `opt:"max_detection_bytes" default:"1048576" help:"bytes read from a file to detect its format"`
	MaxFileBytes      int64  `opt:"max_file_bytes" default:"0" help:"largest peripheral file accepted, in bytes (0 = no limit)"`
	// Resolution and query bounds.
	MaxConcurrentSources  int           `opt:"max_concurrent_sources" default:"4" help:"sources one query resolves at the same time"`
	MaxEventFallbackRows  int64         `opt:"max_event_fallback_rows" default:"5000000" help:"most canonical events one query may normalize when no fresh projection exists"`
	MaxEventFallbackBytes int64         `opt:"max_event_fallback_bytes" default:"1073741824" help:"most bytes of canonical event segments one query may normalize when no fresh projection exists"`
	MaxDocumentMemory     int64         `opt:"max_document_memory" default:"2147483648" help:"bytes of memory the JSON documents read whole while one query normalizes its sources may take at once, each counted at 6x its file size (0 = no limit)"`
	MemoryLimit           string        `opt:"memory_limit" default:"2GB" help:"DuckDB memory limit per query"`
	Threads               int           `opt:"threads" default:"0" help:"DuckDB threads per query (0 = number of CPUs)"`
	MaxSpillBytes         string        `opt:"max_spill_bytes" default:"10GB" help:"most bytes a query may spill to the Snapshot's temp directory"`
	Timeout               time.Duration `opt:"timeout" default:"5m" help:"wall-clock limit of one query"`
	MaxOutputRows         int64         `opt:"max_output_rows" default:"1000000" help:"most rows a query may return; more is an error, not a silent cut"`
}

// Setting describes one option.
type Setting struct {
	Name, Default, Help string
}

// Describe lists every option with its default and help, in field order.
func Describe() []Setting {
	t := reflect.TypeOf(Options{})
	out := make([]Setting, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		out = append(out, Setting{Name: f.Tag.Get("opt"), Default: f.Tag.Get("default"), Help: f.Tag.Get("help")})
	}
	return out
}

// DefaultOptions returns the options with every default applied.
func DefaultOptions() Options {
	var o Options
	v := reflect.ValueOf(&o).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if err := setField(v.Field(i), t.Field(i).Tag.Get("default")); err != nil {
			panic(fmt.Sprintf("catalog: bad default for %s: %v", t.Field(i).Name, err))
		}
	}
	return o
}

// Set assigns an option by its setting name from text (config files, flags).
func (o *Options) Set(name, value string) error {
	v := reflect.ValueOf(o).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("opt") == name {
			if err := setField(v.Field(i), value); err != nil {
				return fmt.Errorf("option %s: %w", name, err)
			}
			return o.Validate()
		}
	}
	return fmt.Errorf("unknown option %q", name)
}

// Validate checks option values.
func (o *Options) Validate() error {
	if o.Errors != ErrorsStrict && o.Errors != ErrorsReport {
		return fmt.Errorf("option errors: %q is not strict or report", o.Errors)
	}
	if o.MaxFiles <= 0 || o.MaxEntries <= 0 || o.MaxDetectionBytes <= 0 || o.MaxConcurrentSources <= 0 {
		return fmt.Errorf("options max_files, max_entries, max_detection_bytes and max_concurrent_sources must be positive")
	}
	return nil
}

var durationType = reflect.TypeOf(time.Duration(0))

func setField(f reflect.Value, s string) error {
	switch {
	case f.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.String:
		f.SetString(s)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		f.SetInt(n)
	default:
		return fmt.Errorf("unsupported option type %s", f.Type())
	}
	return nil
}
