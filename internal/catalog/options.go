package catalog

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Policies for a file no adapter recognizes (Options.Unrecognized).
const (
	UnrecognizedWarn = "warn"
	UnrecognizedFail = "error"
)

// Error policies for candidate sources (docs/cli.md, --errors).
const (
	ErrorsStrict = "strict" // any bad candidate fails the Snapshot build
	ErrorsReport = "report" // a bad candidate becomes a sources row with status error
)

// Options are every limit of discovery, resolution and query execution, in
// one place. Each field's `opt` tag is its setting name (the CLI flag is the
// same name with '-' for '_'), `default` its default, `check` what values it
// accepts (see checkValue) and `help` its one-line description; Describe
// lists them for --help and docs, and a test checks that every one is
// documented.
type Options struct {
	Errors            string `opt:"errors" default:"strict" check:"policy" help:"candidate error policy: strict fails the build, report keeps a bad candidate as a sources row with status error"`
	MaxFiles          int    `opt:"max_files" default:"100000" check:"positive" help:"most candidate sources one Dataset may hold; the walk fails as soon as one more is seen"`
	MaxEntries        int    `opt:"max_entries" default:"1000000" check:"positive" help:"most directory entries or listed objects one Dataset walk may visit"`
	MaxDetectionBytes int64  `opt:"max_detection_bytes" unit:"bytes" default:"1048576" check:"positive" help:"bytes read from a file to detect its format, e.g. 1048576 or 1MiB"`
	MaxFileBytes      int64  `opt:"max_file_bytes" unit:"bytes" default:"0" check:"nonnegative" help:"largest peripheral file accepted, in bytes or as a size such as 2GB (0 = no limit)"`
	Unrecognized      string `opt:"unrecognized" default:"warn" check:"unrecognized" help:"a file no format adapter recognizes: warn (it is not a trajectory: no rows, counted in one summary warning) or error (the query fails)"`
	SkipUnreadable    bool   `opt:"skip_unreadable" default:"false" check:"bool" help:"a file an adapter claims but cannot parse contributes no rows and a warning instead of failing the query"`
	// Resolution and query bounds.
	MaxConcurrentSources  int           `opt:"max_concurrent_sources" default:"4" check:"positive" help:"sources one query resolves at the same time"`
	MaxEventFallbackRows  int64         `opt:"max_event_fallback_rows" default:"5000000" check:"nonnegative" help:"most canonical events one query may normalize when no fresh projection exists"`
	MaxEventFallbackBytes int64         `opt:"max_event_fallback_bytes" unit:"bytes" default:"1073741824" check:"nonnegative" help:"most bytes of canonical event segments one query may normalize when no fresh projection exists"`
	MaxDocumentMemory     int64         `opt:"max_document_memory" unit:"bytes" default:"2147483648" check:"nonnegative" help:"bytes of memory the JSON documents read whole while one query normalizes its sources may take at once, each counted at 6x its file size, Claude Code sessions held until their file ends at 2x (0 = no limit)"`
	MemoryLimit           string        `opt:"memory_limit" default:"2GB" check:"size" help:"DuckDB memory limit per query, e.g. 2GB or 512MiB"`
	Threads               int           `opt:"threads" default:"0" check:"nonnegative" help:"DuckDB threads per query (0 = number of CPUs)"`
	MaxSpillBytes         string        `opt:"max_spill_bytes" default:"10GB" check:"size0" help:"most bytes a query may spill to the Snapshot's temp directory, e.g. 10GB (0B = never spill)"`
	Timeout               time.Duration `opt:"timeout" default:"5m" check:"nonnegative" help:"wall-clock limit of one query, e.g. 30s or 5m (0 = none)"`
	MaxOutputRows         int64         `opt:"max_output_rows" default:"1000000" check:"nonnegative" help:"most rows a query may return; more is an error, not a silent cut (0 = no limit)"`
	// The normalization cache (docs/storage.md). The library keeps none
	// unless CacheDir is set; the CLI sets it to the user cache directory.
	CacheDir      string `opt:"cache_dir" default:"" check:"text" help:"directory of the normalization cache, which keeps normalized peripheral files between runs (empty: no cache)"`
	NoCache       bool   `opt:"no_cache" default:"false" check:"bool" help:"neither read nor write the normalization cache"`
	MaxCacheBytes string `opt:"max_cache_bytes" default:"10GB" check:"size" help:"most bytes the normalization cache keeps, the least recently used entries going first, e.g. 10GB"`
}

// Setting describes one option.
type Setting struct {
	Name, Default, Help string
	// Switch marks a true/false option: a flag that takes no value.
	Switch bool
}

// Describe lists every option with its default and help, in field order.
func Describe() []Setting {
	t := reflect.TypeOf(Options{})
	out := make([]Setting, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		out = append(out, Setting{Name: f.Tag.Get("opt"), Default: f.Tag.Get("default"), Help: f.Tag.Get("help"), Switch: f.Type.Kind() == reflect.Bool})
	}
	return out
}

// DefaultOptions returns the options with every default applied.
func DefaultOptions() Options {
	var o Options
	v := reflect.ValueOf(&o).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if err := setField(t.Field(i), v.Field(i), t.Field(i).Tag.Get("default")); err != nil {
			panic(fmt.Sprintf("catalog: bad default for %s: %v", t.Field(i).Name, err))
		}
	}
	return o
}

// OptionError rejects the value of one option. Callers that know the option
// by another name (the CLI's flags: Flag) show it with that name.
type OptionError struct {
	Setting string // e.g. max_output_rows
	Value   string // as given, or as set (a Duration prints as 1m0s)
	Reason  string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("option %s: %q %s", e.Setting, e.Value, e.Reason)
}

// Flag is the CLI flag of the option.
func (e *OptionError) Flag() string { return "--" + strings.ReplaceAll(e.Setting, "_", "-") }

// Set assigns an option by its setting name from text (config files, flags)
// and checks the value.
func (o *Options) Set(name, value string) error {
	v := reflect.ValueOf(o).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("opt") != name {
			continue
		}
		if err := setField(f, v.Field(i), value); err != nil {
			return &OptionError{Setting: name, Value: value, Reason: err.Error()}
		}
		return checkField(f, v.Field(i), value)
	}
	return fmt.Errorf("unknown option %q", name)
}

// Validate checks every option value (the first bad one is the error).
func (o *Options) Validate() error {
	v := reflect.ValueOf(o).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if err := checkField(t.Field(i), v.Field(i), fmt.Sprint(v.Field(i).Interface())); err != nil {
			return err
		}
	}
	return nil
}

// checkField applies the field's `check` tag: policy (strict or report),
// unrecognized (warn or error),
// positive or nonnegative numbers and durations, or a DuckDB memory size
// (size: more than zero bytes; size0: zero allowed); text and bool accept
// any value their type holds.
func checkField(f reflect.StructField, v reflect.Value, shown string) error {
	reason := ""
	switch check := f.Tag.Get("check"); check {
	case "policy":
		if s := v.String(); s != ErrorsStrict && s != ErrorsReport {
			reason = "is not strict or report"
		}
	case "unrecognized":
		if s := v.String(); s != UnrecognizedWarn && s != UnrecognizedFail {
			reason = "is not warn or error"
		}
	case "text", "bool":
	case "positive":
		if v.Int() <= 0 {
			reason = "must be positive"
		}
	case "nonnegative":
		if v.Int() < 0 {
			reason = "must not be negative"
		}
	case "size", "size0":
		n, err := ParseMemorySize(v.String())
		switch {
		case err != nil:
			reason = err.Error()
		case n == 0 && check == "size":
			reason = "must be more than zero bytes"
		}
	default:
		panic(fmt.Sprintf("catalog: option %s has check %q", f.Name, check))
	}
	if reason != "" {
		return &OptionError{Setting: f.Tag.Get("opt"), Value: shown, Reason: reason}
	}
	return nil
}

// memoryUnits are the units ParseMemorySize accepts, all of which DuckDB's
// memory_limit and max_temp_directory_size accept too.
var memoryUnits = map[string]float64{
	"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

var memorySizeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$`) })

// ParseMemorySize reads a memory size as DuckDB settings take it — a number
// and a unit, "2GB", "1.5 GiB", "512MiB", "0B" — and returns its bytes.
// DuckDB reads a negative number as "no limit", so a sign is an error
// here, as is a missing or unknown unit.
func ParseMemorySize(s string) (int64, error) {
	m := memorySizeRe().FindStringSubmatch(s)
	if m == nil {
		return 0, errors.New("is not a size: want a number and a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 2GB")
	}
	unit, ok := memoryUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("has an unknown unit %q: use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB", m[2])
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n*unit >= 1<<62 {
		return 0, errors.New("is too large")
	}
	return int64(n * unit), nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// setField sets f, the value of field sf, from text. A whole number of
// bytes (unit:"bytes") may also be written as a size, "150MB" or "2GiB".
func setField(sf reflect.StructField, f reflect.Value, s string) error {
	switch {
	case f.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return errors.New("is not a duration, e.g. 30s, 5m or 1h30m")
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.String:
		f.SetString(s)
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("is not true or false")
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil && sf.Tag.Get("unit") == "bytes" {
			if n, err = ParseMemorySize(s); err != nil {
				return errors.New("is not a whole number of bytes or a size, e.g. 2GB or 512MiB")
			}
		}
		if err != nil {
			return errors.New("is not a whole number")
		}
		f.SetInt(n)
	default:
		return fmt.Errorf("unsupported option type %s", f.Type())
	}
	return nil
}
