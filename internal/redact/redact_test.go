package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// The credentials of every form are replaced and what surrounds them is
// kept.
func TestTextRedactsEveryCredentialForm(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Authorization: AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE123/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123abcd",
			"Authorization: AWS4-HMAC-SHA256 Credential=[redacted], SignedHeaders=host;x-amz-date, Signature=[redacted]"},
		{"Authorization: SharedKey myaccount:c2VjcmV0c2lnbmF0dXJl", "Authorization: SharedKey [redacted]"},
		{"Authorization: SharedKeyLite acct:abc", "Authorization: SharedKeyLite [redacted]"},
		{"authorization: Bearer ya29.a0AfH6SMBx-token", "authorization: Bearer [redacted]"},
		{"GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F2026&X-Amz-Signature=deadbeef&x=1",
			"GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&x=1"},
		{"https://acct.blob.core.windows.net/c/b?sv=2020&sig=abc%2Bdef&se=2026", "https://acct.blob.core.windows.net/c/b?sv=2020&sig=[redacted]&se=2026"},
		{"https://storage.googleapis.com/b/o?X-Goog-Signature=f00d", "https://storage.googleapis.com/b/o?X-Goog-Signature=[redacted]"},
		{"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=x", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=[redacted];EndpointSuffix=x"},
		{"s3://AKIA:secret@bucket/key", "s3://[redacted]@bucket/key"},
		{"open runs: no such file", "open runs: no such file"},
		{"signature mismatch in step 3", "signature mismatch in step 3"},
	} {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// A log line's strings and errors go through Text.
func TestReplaceAttrRedactsLogLines(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}))
	log.Warn("backend said Credential=AKIAINMSG/x", "error", errors.New("Authorization: Bearer tok123"), "body", "sig=abc")
	for _, leak := range []string{"AKIAINMSG", "tok123", "sig=abc"} {
		if strings.Contains(b.String(), leak) {
			t.Errorf("log line shows %q: %s", leak, b.String())
		}
	}
}
