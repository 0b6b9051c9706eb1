package directory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/fsx"
)

const meta = "[meta]\nversion = 1\n"

const alice = `
[users.alice]
access_key = "pcak_a"
secret_key = "sa"
`

const bob = `
[users.bob]
access_key = "pcak_b"
secret_key = "sb"
`

const local = `
[datasets.local]
uri = "/data/evals"
`

const prod = `
[datasets.prod]
uri = "s3://prod/"
endpoint = "http://127.0.0.1:9000"
region = "us-east-1"
access_key = "BACKEND_AK"
secret_key = "BACKEND_SK"
`

func grant(user, dataset string) string {
	return "\n[[grants]]\nuser = \"" + user + "\"\ndataset = \"" + dataset + "\"\n"
}

func TestRFCSampleParses(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "rfc-sample.toml"))
	if err != nil {
		t.Fatal(err)
	}
	a := NewACL(c)
	if got := strings.Join(a.Visible(Principal{User: "alice"}), ","); got != "default,prod,prod2" {
		t.Errorf("alice sees %s, want default,prod,prod2", got)
	}
	if got := strings.Join(a.Visible(Principal{}), ","); got != "prod,prod2" {
		t.Errorf("anonymous sees %s, want prod,prod2", got)
	}
	if got := c.Grants[2].Permissions; len(got) != 3 {
		t.Errorf("permissions not kept: %v", got)
	}
}

// TestValidationRules checks every rule with the exact message a user reads.
func TestValidationRules(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"no meta", alice, "cfg.toml: meta.version: is required (supported: 1)"},
		{"future version", "[meta]\nversion = 2\n", "cfg.toml: meta.version: version 2 is not supported (supported: 1)"},
		{"negative revision", "[meta]\nversion = 1\nrevision = -1\n", "cfg.toml: meta.revision: must not be negative"},
		{"unknown meta key", meta + "owner = \"x\"\n", `cfg.toml: unknown key "meta.owner"`},
		{"unknown user key", meta + alice + "datasets = [\"local\"]\n", `cfg.toml: unknown key "users.alice.datasets"`},
		{"legacy libraries table", meta + "[libraries.x]\nuri = \"/x\"\n", `cfg.toml: unknown key "libraries.x"`},
		{"unknown grant key", meta + alice + local + grant("alice", "local") + "mode = \"rw\"\n", `cfg.toml: unknown key "grants.mode"`},
		{"uppercase user", meta + "[users.Alice]\naccess_key = \"k\"\nsecret_key = \"s\"\n",
			`cfg.toml: users.Alice: invalid user name "Alice": use lowercase letters, digits and _, not starting with a digit`},
		{"digit-first dataset", meta + "[datasets.1x]\nuri = \"/x\"\n",
			`cfg.toml: datasets.1x: invalid dataset name "1x": use lowercase letters, digits and _, not starting with a digit`},
		{"dash in name", meta + "[datasets.a-b]\nuri = \"/x\"\n",
			`cfg.toml: datasets.a-b: invalid dataset name "a-b": use lowercase letters, digits and _, not starting with a digit`},
		{"missing access key", meta + "[users.alice]\nsecret_key = \"s\"\n", "cfg.toml: users.alice.access_key: is required"},
		{"blank secret", meta + "[users.alice]\naccess_key = \"k\"\nsecret_key = \"  \"\n", "cfg.toml: users.alice.secret_key: is required"},
		{"shared access key", meta + alice + strings.ReplaceAll(bob, "pcak_b", "pcak_a"),
			"cfg.toml: users.bob.access_key: is the same as users.alice.access_key; access keys must be unique"},
		{"dataset without uri", meta + "[datasets.x]\nregion = \"r\"\n", "cfg.toml: datasets.x.uri: is required"},
		{"relative local path", meta + "[datasets.x]\nuri = \"data/x\"\n", "cfg.toml: datasets.x.uri: a local path must be absolute"},
		{"local with keys", meta + "[datasets.x]\nuri = \"/x\"\naccess_key = \"a\"\nsecret_key = \"b\"\n",
			"cfg.toml: datasets.x: a local path must not set endpoint, region, access_key or secret_key"},
		{"local with endpoint", meta + "[datasets.x]\nuri = \"/x\"\nendpoint = \"http://h\"\n",
			"cfg.toml: datasets.x: a local path must not set endpoint, region, access_key or secret_key"},
		{"s3 without keys", meta + "[datasets.x]\nuri = \"s3://b/p\"\n", "cfg.toml: datasets.x: an s3:// dataset must set both access_key and secret_key"},
		{"s3 without secret", meta + "[datasets.x]\nuri = \"s3://b/p\"\naccess_key = \"a\"\n", "cfg.toml: datasets.x: an s3:// dataset must set both access_key and secret_key"},
		{"s3 without bucket", meta + "[datasets.x]\nuri = \"s3:///p\"\naccess_key = \"a\"\nsecret_key = \"b\"\n", "cfg.toml: datasets.x.uri: URI s3:///p: missing bucket"},
		{"s3 with query", meta + "[datasets.x]\nuri = \"s3://b/p?x=1\"\naccess_key = \"a\"\nsecret_key = \"b\"\n",
			"cfg.toml: datasets.x.uri: URI s3://b/p: query strings and fragments are not supported; put credentials in the Dataset settings"},
		{"bad endpoint", meta + "[datasets.x]\nuri = \"s3://b/p\"\nendpoint = \"127.0.0.1:9000\"\naccess_key = \"a\"\nsecret_key = \"b\"\n",
			"cfg.toml: datasets.x.endpoint: must be an http:// or https:// URL"},
		{"endpoint with user info", meta + "[datasets.x]\nuri = \"s3://b/p\"\nendpoint = \"http://u:p@h\"\naccess_key = \"a\"\nsecret_key = \"b\"\n",
			"cfg.toml: datasets.x.endpoint: must not contain user info, a query or a fragment"},
		{"az scheme", meta + "[datasets.x]\nuri = \"az://c/p\"\n", `cfg.toml: datasets.x.uri: scheme "az" is not supported: use an absolute local path or s3://bucket/prefix`},
		{"grant without user", meta + local + "[[grants]]\ndataset = \"local\"\n", "cfg.toml: grants[0].user: is required"},
		{"grant without dataset", meta + alice + "[[grants]]\nuser = \"alice\"\n", "cfg.toml: grants[0].dataset: is required"},
		{"grant of unknown dataset", meta + alice + grant("alice", "nope"), `cfg.toml: grants[0].dataset: no dataset "nope" in [datasets]`},
		{"grant to unknown user", meta + local + grant("carol", "local"), `cfg.toml: grants[0].user: no user "carol" in [users]`},
		{"duplicate grant", meta + alice + local + grant("alice", "local") + grant("alice", "local"),
			`cfg.toml: grants[1]: grants dataset "local" to user "alice" again (grants[0] already does, counting user = "*" as every user)`},
		{"duplicate after expansion", meta + alice + bob + local + grant("bob", "local") + grant("*", "local"),
			`cfg.toml: grants[1]: grants dataset "local" to user "bob" again (grants[0] already does, counting user = "*" as every user)`},
		{"public twice without users", meta + local + grant("*", "local") + grant("*", "local"),
			`cfg.toml: grants[1]: grants dataset "local" to user "*" again (grants[0] already does, counting user = "*" as every user)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("cfg.toml", []byte(tt.config))
			if err == nil {
				t.Fatalf("accepted; want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %q\nwant %q", err.Error(), tt.want)
			}
		})
	}
}

func TestValidConfigs(t *testing.T) {
	for name, cfg := range map[string]string{
		"empty":                     meta,
		"public and named differ":   meta + alice + local + prod + grant("*", "prod") + grant("alice", "local"),
		"public with no users":      meta + local + grant("*", "local"),
		"s3 without endpoint":       meta + "[datasets.x]\nuri = \"s3://b\"\naccess_key = \"a\"\nsecret_key = \"b\"\n",
		"two backends hand-written": meta + prod + strings.NewReplacer("prod]", "prod2]", "BACKEND_AK", "OTHER_AK").Replace(prod),
	} {
		if _, err := Parse("cfg.toml", []byte(cfg)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestParseErrorsDoNotEchoSecrets: a syntax error next to a secret names the
// line and key but not the text around it.
func TestParseErrorsDoNotEchoSecrets(t *testing.T) {
	for name, cfg := range map[string]string{
		"bare value":      meta + "[users.alice]\naccess_key = \"k\"\nsecret_key = hunter2hunter2\n",
		"unclosed string": meta + "[users.alice]\naccess_key = \"k\"\nsecret_key = \"hunter2hunter2\n",
		"trailing text":   meta + "[users.alice]\naccess_key = \"k\"\nsecret_key = \"s\" hunter2hunter2\n",
		"wrong type":      meta + "[users.alice]\naccess_key = \"k\"\nsecret_key = [\"hunter2hunter2\"]\n",
	} {
		_, err := Parse("cfg.toml", []byte(cfg))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error echoes the secret: %v", name, err)
		}
		if !strings.HasPrefix(err.Error(), "cfg.toml: ") {
			t.Errorf("%s: error does not name the file: %v", name, err)
		}
	}
	_, err := Parse("cfg.toml", []byte(meta+"[users.alice]\naccess_key = \"k\"\nsecret_key = hunter2hunter2\n"))
	if want := "cfg.toml: line 5 (after key users.alice.secret_key): invalid TOML: expected value but found … instead"; err.Error() != want {
		t.Errorf("got  %q\nwant %q", err, want)
	}
}

func TestSizeBound(t *testing.T) {
	big := meta + "# " + strings.Repeat("x", MaxConfigBytes) + "\n"
	if _, err := Parse("cfg.toml", []byte(big)); err == nil || !strings.Contains(err.Error(), "the limit is 1048576") {
		t.Errorf("oversized config: %v", err)
	}
	path := filepath.Join(t.TempDir(), "catalog.toml")
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than the limit of 1048576 bytes") {
		t.Errorf("oversized file: %v", err)
	}
}

func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope", "catalog.toml")
	if _, err := Load(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want ErrNotExist", err)
	}
	c, err := LoadOrEmpty(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Meta != (Meta{Version: 1, Name: "default"}) || len(c.Users)+len(c.Datasets)+len(c.Grants) != 0 {
		t.Errorf("LoadOrEmpty of a missing file: %+v", c)
	}
}

// TestSaveRoundTripAndRevision: a save advances meta.revision, writes 0600,
// and reads back to the same config.
func TestSaveRoundTripAndRevision(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "catalog.toml")
	c, err := Parse("cfg.toml", []byte(meta+"revision = 7\n"+alice+local+prod+grant("alice", "local")+grant("*", "prod")))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if c.Meta.Revision != 8 {
		t.Errorf("revision after save = %d, want 8", c.Meta.Revision)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := c.Encode()
	got, _ := back.Encode()
	if string(got) != string(want) {
		t.Errorf("round trip differs:\n%s\nwant\n%s", got, want)
	}
}

// TestSaveRefusesInvalid: an edit that breaks a rule is not written.
func TestSaveRefusesInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.toml")
	c := Empty()
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	c.Grants = append(c.Grants, Grant{User: "alice", Dataset: "x"})
	if err := c.Save(path); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("invalid save: %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Errorf("file changed by a refused save:\n%s", after)
	}
}

// TestSaveCrashKeepsPrevious injects a failure at every step of the atomic
// write: the previous file must stay byte for byte, with no temp file left.
func TestSaveCrashKeepsPrevious(t *testing.T) {
	for _, at := range []fsx.FailPoint{fsx.FailCreate, fsx.FailWrite, fsx.FailSync, fsx.FailRename} {
		t.Run(string(at), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "catalog.toml")
			c, err := Parse("cfg.toml", []byte(meta+alice+local))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Save(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			c.Grants = append(c.Grants, Grant{User: "alice", Dataset: "local"})
			restore := fsx.SetFailHook(func(p string, got fsx.FailPoint) error {
				if got == at {
					return errors.New("crash")
				}
				return nil
			})
			err = c.Save(path)
			restore()
			if err == nil {
				t.Fatal("save succeeded despite the injected failure")
			}
			after, _ := os.ReadFile(path)
			if string(after) != string(before) {
				t.Errorf("previous file not kept:\n%s\nwant\n%s", after, before)
			}
			if c.Meta.Revision != 1 {
				t.Errorf("revision advanced to %d by a failed save", c.Meta.Revision)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("leftover files: %v", entries)
			}
		})
	}
}
