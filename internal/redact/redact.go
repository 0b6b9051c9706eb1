// Package redact removes credentials from text before it leaves the
// process: error bodies of the HTTP API and log lines go through the same
// function, so what one hides the other cannot show (docs/storage.md,
// "What can leak").
package redact

import (
	"log/slog"
	"regexp"
	"sync"
)

// Mark replaces every credential.
const Mark = "[redacted]"

// patterns match the credential forms the object-store backends and their
// SDKs can echo back in an error: the SigV4 Authorization header's
// Credential (the access key id) and Signature, Azure's SharedKey
// header and connection-string AccountKey, bearer tokens (GCS OAuth),
// the signature and token parameters of presigned and SAS URLs, and the
// user info of a URL.
var patterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// key=value forms, in headers and in query strings.
		regexp.MustCompile(`(?i)\b(credential|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|x-goog-security-token|sig|access_token|accountkey|sharedaccesssignature)(\s*=\s*)[^&\s,;"'<>]+`),
		// Authorization schemes that carry the secret after the name.
		regexp.MustCompile(`(?i)\b(sharedkey|sharedkeylite|bearer|basic)(\s+)[^\s,;"'<>]+`),
	}
})

var userInfo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@"'<>]+@`)
})

// Text returns s with every credential replaced by Mark; the name of each
// stays, so a reader still sees what was there.
func Text(s string) string {
	for _, re := range patterns() {
		s = re.ReplaceAllString(s, "${1}${2}"+Mark)
	}
	return userInfo().ReplaceAllString(s, "${1}"+Mark+"@")
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that passes every string
// value of a log line through Text, errors included.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value.Any().(type) {
	case string:
		if r := Text(v); r != v {
			a.Value = slog.StringValue(r)
		}
	case error:
		a.Value = slog.StringValue(Text(v.Error()))
	}
	return a
}
