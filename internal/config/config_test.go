package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestParseErrorsNeverShowValues: a config the TOML decoder rejects is
// reported by file, line and key, never with the text of a value, which may
// be a secret key written without quotes.
func TestParseErrorsNeverShowValues(t *testing.T) {
	const secret = "wJalrXUtnFEMI7K7MDENG"
	for name, body := range map[string]string{
		"unquoted":       "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = " + secret + "\n",
		"unquoted tail":  "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = " + secret + " trailing\n",
		"unterminated":   "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = \"" + secret + "\n",
		"bad escape":     "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = \"" + secret + `\q` + "\"\n",
		"single quoted":  "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = '" + secret + "\n",
		"number":         "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = 0x" + "GG" + secret + "\n",
		"inline table":   "pins = { arch = { uri = \"s3://b/\", secret_key = " + secret + " } }\n",
		"array":          "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = [" + secret + "]\n",
		"wrong type":     "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = 1" + strings.Repeat("7", 15) + "\n",
		"duplicate":      "[pins.arch]\nuri = \"s3://b/p/\"\nsecret_key = \"" + secret + "\"\nsecret_key = \"" + secret + "\"\n",
		"key with value": "[pins.arch]\nuri = \"s3://b/p/\"\n" + secret + "\n",
	} {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, secret[:8]) || strings.Contains(msg, "777777") {
			t.Errorf("%s: error shows the value: %s", name, msg)
		}
		if !regexp.MustCompile(regexp.QuoteMeta(path) + `:\d+(:\d+)? \(key pins\.arch`).MatchString(msg) {
			t.Errorf("%s: error does not give file, line and key: %s", name, msg)
		}
	}
}
