package directory

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: no config text panics the parser, an accepted config always
// builds an ACL and survives an encode/parse round trip, and no error ever
// repeats a secret-looking value.
func FuzzParse(f *testing.F) {
	sample, err := os.ReadFile(filepath.Join("testdata", "rfc-sample.toml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(sample))
	f.Add(matrixConfig)
	f.Add(meta + alice + local + prod + grant("*", "prod") + grant("alice", "local"))
	f.Add(meta + "[users.alice]\naccess_key = \"k\"\nsecret_key = zzsecretzz\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse("cfg.toml", []byte(text))
		if err != nil {
			if strings.Contains(text, "zzsecretzz") && strings.Contains(err.Error(), "zzsecretzz") {
				t.Fatalf("error repeats the secret: %v", err)
			}
			return
		}
		a := NewACL(c)
		for name := range c.Users {
			a.Tickets(Principal{User: name})
		}
		data, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("again.toml", data); err != nil {
			t.Fatalf("an accepted config does not parse again: %v\n%s", err, data)
		}
	})
}

// FuzzParseLocator: a normalized locator is a fixed point.
func FuzzParseLocator(f *testing.F) {
	for _, s := range []string{"catalog://127.0.0.1:8081", "catalog://[::1]:1/", "catalog://u:p@127.0.0.1:1", "catalog:x", "catalog://127.0.0.1:8081?a#b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseLocator(s)
		if err != nil {
			return
		}
		again, err := ParseLocator(got)
		if err != nil || again != got {
			t.Fatalf("%q → %q → %q, %v", s, got, again, err)
		}
	})
}

func TestNewUserKeys(t *testing.T) {
	ak1, sk1 := NewUserKeys()
	ak2, sk2 := NewUserKeys()
	if ak1 == ak2 || sk1 == sk2 {
		t.Fatal("two calls gave the same keys")
	}
	if !strings.HasPrefix(ak1, "pcak_") || len(ak1) != len("pcak_")+32 {
		t.Errorf("access key %q", ak1)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sk1.Reveal())
	if err != nil || len(raw) != 32 {
		t.Errorf("secret key is not 32 bytes of base64url: %v (%d bytes)", err, len(raw))
	}
}
