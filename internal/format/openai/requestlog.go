package openai

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// normalizeRequestLog reads request/response logs, one request per line:
// Batch API input {custom_id, method, url, body{model, messages}}, Batch
// API output {custom_id, response{status_code, body{choices, usage}},
// error}, and proxy logs {request{messages}, response{choices}}. Each
// request re-sends its history; see historyTracker.
func normalizeRequestLog(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	ids := format.SessionIDs{}
	history := historyTracker{strict: true}
	return format.EachLine(ctx, r, func(n int64, line []byte) error {
		l := loc{line: n}
		top, err := decodeObject(line)
		if err != nil {
			return elementError(src, l, err)
		}
		b := newBuilder(layoutRequestLog, l)
		idKey, id := firstString(mapObject(top), "custom_id", "id", "request_id")
		b.setIdentity(ids, id, lineID(n))
		run := &b.sl.Run

		reqKey := "body"
		if _, ok := top[reqKey]; !ok {
			reqKey = "request"
		}
		var req map[string]jsonx.RawMessage
		_ = jsonx.Unmarshal(top[reqKey], &req)
		next := 0
		if req != nil {
			next = b.chatMessages(req["messages"], 0, l.sub(reqKey).sub("messages"))
			if m, ok := stringValue(req["model"]); ok {
				run.AgentModelName = model.Str(m)
			}
		}
		respExtra := b.response(top, next, l)
		if !format.IsNull(top["error"]) {
			run.Status = model.StatusError
		}
		run.Extra = format.Extra(top, idKey, reqKey, "response")
		if req != nil {
			if e := format.Extra(req, "messages", "model"); e != nil {
				run.Extra = format.MergeExtra(run.Extra, "request", jsonx.RawMessage(*e))
			}
		}
		if respExtra != nil {
			run.Extra = format.MergeExtra(run.Extra, "response", jsonx.RawMessage(*respExtra))
		}
		history.mark("", b.sl)
		return emit(b.finish(src.File))
	})
}

// response maps a logged chat.completion (top.response, or its body in the
// Batch API envelope): each choice's message becomes an agent step with
// index from next on, the usage goes to the first choice's step, and the
// run status follows the HTTP status and finish reason. It returns the
// response members no column holds.
func (b *builder) response(top map[string]jsonx.RawMessage, next int, l loc) *string {
	var env, body map[string]jsonx.RawMessage
	if jsonx.Unmarshal(top["response"], &env) != nil || env == nil {
		return nil
	}
	at := l.sub("response")
	body = env
	_, batch := env["body"]
	if batch {
		_ = jsonx.Unmarshal(env["body"], &body)
		at = at.sub("body")
	}
	run := &b.sl.Run
	if code, ok := format.Int(env["status_code"]); ok && code >= 400 {
		run.Status = model.StatusError
	}
	modelName, _ := stringValue(body["model"])
	if run.AgentModelName == nil {
		run.AgentModelName = model.Str(modelName)
	}
	var ts *time.Time
	if t, ok := format.Time(body["created"]); ok {
		ts = model.Time(t)
	}
	choices, _ := decodeMessages(body["choices"])
	first := len(b.sl.Steps)
	for i, ch := range choices {
		var msg map[string]jsonx.RawMessage
		if ch != nil {
			_ = jsonx.Unmarshal(ch["message"], &msg)
		}
		if msg == nil {
			b.warnAt(at.sub("choices").elem(i), "choice has no message; skipped")
			continue
		}
		b.chatMessage(strconv.Itoa(next+i), at.sub("choices").elem(i).sub("message"), mapObject(msg))
		st := &b.sl.Steps[len(b.sl.Steps)-1]
		if st.Timestamp == nil {
			st.Timestamp = ts
		}
		if st.ModelName == nil {
			st.ModelName = model.Str(modelName)
		}
		if e := format.Extra(ch, "message"); e != nil {
			st.Extra = format.MergeExtra(st.Extra, "choice", jsonx.RawMessage(*e))
		}
		if run.Status == "" {
			run.Status = finishStatus(format.String(ch["finish_reason"]))
		}
	}
	if len(b.sl.Steps) > first {
		format.ParseUsage(body["usage"]).Apply(&b.sl.Steps[first])
	}
	extra := format.Extra(body, "choices", "usage", "model", "created")
	if batch {
		if e := format.Extra(env, "body"); e != nil {
			extra = format.MergeExtra(extra, "envelope", jsonx.RawMessage(*e))
		}
	}
	return extra
}

// finishStatus maps a choice's finish_reason to a run status.
func finishStatus(reason string) string {
	switch reason {
	case "stop", "tool_calls", "function_call":
		return model.StatusCompleted
	case "length":
		return model.StatusTruncated
	case "content_filter":
		return model.StatusError
	}
	return ""
}
