package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/redact"
)

// A backend that echoes a request's Authorization header in its error
// reaches neither the caller's body nor the log with its credential: both
// go through the one redaction.
func TestErrorBodiesAndLogsRedactEchoedCredentials(t *testing.T) {
	for _, echoed := range []string{
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIAECHOED0001/20260101/us-east-1/s3/aws4_request, Signature=SIGECHOED0001",
		"Authorization: SharedKey account:SIGECHOED0001",
		"Authorization: Bearer SIGECHOED0001",
		"GET https://b/o?X-Amz-Signature=SIGECHOED0001",
	} {
		var logs bytes.Buffer
		s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: redact.ReplaceAttr}))}
		w := httptest.NewRecorder()
		s.writeError(w, httptest.NewRequest("GET", "/api/runs", nil), fmt.Errorf("list s3://b/: 403 Forbidden: %w", errors.New(echoed)))
		for what, text := range map[string]string{"body": w.Body.String(), "log": logs.String()} {
			if strings.Contains(text, "ECHOED0001") {
				t.Errorf("the %s shows the credential: %s", what, text)
			}
		}
		if !strings.Contains(w.Body.String(), "403 Forbidden") {
			t.Errorf("the body lost the cause: %s", w.Body)
		}
	}
}
