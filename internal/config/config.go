// Package config reads and writes the user config file: Dataset pins
// ([pins.<name>] tables) that commands accept as @name or @name/sub/path.
// The file is decoded strictly (an unknown key is an error naming it) and
// replaced atomically.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/objstore"
)

// Pin is one named Dataset. The object-store settings apply to that
// Dataset's client only (s3://, az://, gs:// URIs); the file is written
// 0600 because it may hold a secret key.
type Pin struct {
	URI       string `toml:"uri"`
	Format    string `toml:"format,omitempty"`
	Endpoint  string `toml:"endpoint,omitempty"`
	Region    string `toml:"region,omitempty"`
	PathStyle bool   `toml:"path_style,omitempty"`
	AccessKey string `toml:"access_key,omitempty"`
	SecretKey string `toml:"secret_key,omitempty"`
	Account   string `toml:"account,omitempty"`
	// Include and Exclude are the Dataset's globs over _file_
	// (catalog.PathFilter).
	Include []string `toml:"include,omitempty"`
	Exclude []string `toml:"exclude,omitempty"`
	// Unrecognized is the Dataset's policy for files no adapter recognizes
	// (warn or error; empty: the command's --unrecognized).
	Unrecognized string `toml:"unrecognized,omitempty"`
}

// Store returns the pin's object-store settings.
func (p Pin) Store() objstore.Config {
	return objstore.Config{Endpoint: p.Endpoint, Region: p.Region, PathStyle: p.PathStyle,
		AccessKey: p.AccessKey, SecretKey: objstore.Secret(p.SecretKey), Account: p.Account}
}

// File is the config file's content.
type File struct {
	Pins map[string]Pin `toml:"pins"`
}

// DefaultPath is $XDG_CONFIG_HOME/pchronicle/config.toml (or the OS
// equivalent).
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "pchronicle.toml"
	}
	return filepath.Join(dir, "pchronicle", "config.toml")
}

// Load reads path; a missing file is an empty config.
func Load(path string) (*File, error) {
	f := &File{Pins: map[string]Pin{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	md, err := toml.Decode(string(data), f)
	if err != nil {
		return nil, decodeError(path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return nil, fmt.Errorf("%s: unknown key %q", path, undecoded[0].String())
	}
	if f.Pins == nil {
		f.Pins = map[string]Pin{}
	}
	for name, p := range f.Pins {
		if p.URI == "" {
			return nil, fmt.Errorf("%s: pins.%s: uri is required", path, name)
		}
	}
	return f, nil
}

// quotedInput matches what the TOML decoder quotes from the input in its
// messages ("found \"...\"", '...').
var quotedInput = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'`) })

// decodedAt is how the decoder prefixes errors from filling the struct
// (a value of the wrong type), which are not ParseErrors.
var decodedAt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): `) })

// decodeError reports a config the TOML decoder rejected by file, line,
// column and key, with everything the decoder quoted from the input taken
// out: that text may be a secret written without quotes
// (`secret_key = abc...` makes the decoder say it "found" the key).
func decodeError(path string, err error) error {
	where, msg := path, err.Error()
	var pe toml.ParseError
	switch m := decodedAt().FindStringSubmatch(msg); {
	case errors.As(err, &pe):
		where = fmt.Sprintf("%s:%d:%d", path, pe.Position.Line, pe.Position.Col)
		msg = pe.Message
		if pe.LastKey != "" {
			where += " (key " + pe.LastKey + ")"
		}
	case m != nil:
		where = fmt.Sprintf("%s:%s (key %s)", path, m[1], m[2])
		msg = msg[len(m[0]):]
	}
	return fmt.Errorf("%s: invalid config: %s (values are not shown; strings need quotes: key = \"value\")",
		where, quotedInput().ReplaceAllString(msg, "'…'"))
}

// Save writes the config atomically, creating its directory.
func (f *File) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(f); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, buf.Bytes(), 0o600)
}

// Names returns the pin names in order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Pins))
	for n := range f.Pins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Resolve expands "@name" or "@name/sub/path" into a URI and format hint;
// any other string is returned unchanged.
func (f *File) Resolve(ref string) (uri, format string, err error) {
	p, err := f.ResolvePin(ref)
	return p.URI, p.Format, err
}

// ResolvePin is Resolve returning the whole pin (with its object-store
// settings) and the expanded URI; any other string is a pin with only a URI.
func (f *File) ResolvePin(ref string) (Pin, error) {
	if !strings.HasPrefix(ref, "@") {
		return Pin{URI: ref}, nil
	}
	name, suffix, _ := strings.Cut(ref[1:], "/")
	p, ok := f.Pins[name]
	if !ok {
		return Pin{}, fmt.Errorf("unknown pin @%s (see `pchronicle dataset list`)", name)
	}
	if p.IsCatalog() {
		return Pin{}, fmt.Errorf("@%s is a Directory (%s): its datasets can only be read, as @%s/NAME", name, p.URI, name)
	}
	uri, err := joinPinPath(ref, p.URI, suffix)
	if err != nil {
		return Pin{}, err
	}
	p.URI = uri
	return p, nil
}
