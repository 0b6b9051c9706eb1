package otel

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/spans"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// span reads one OTLP span and returns it with its trace id.
func span(sp, scope map[string]jsonx.RawMessage) (*spans.Span, string) {
	attrs := attributes(sp["attributes"])
	op := firstAttr(attrs, "gen_ai.operation.name")
	oi := strings.ToUpper(firstAttr(attrs, "openinference.span.kind"))
	s := &spans.Span{ID: format.String(sp["spanId"]), Parent: format.String(sp["parentSpanId"]), Name: format.String(sp["name"])}
	s.Start, s.End = unixNano(sp["startTimeUnixNano"]), unixNano(sp["endTimeUnixNano"])
	status := format.SplitObject(sp["status"])
	code := text(status["code"])
	s.Error = code == "2" || code == "STATUS_CODE_ERROR"
	s.Type = oi
	if s.Type == "" {
		s.Type = op
	}
	if s.Type == "" {
		s.Type = "span"
	}
	switch {
	case op == "chat" || op == "text_completion" || op == "generate_content" || oi == "LLM":
		s.Kind = spans.LLM
		s.Model = firstAttr(attrs, "gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
		s.Usage = usage(attrs)
		s.Input, s.Output = llmInput(attrs), llmOutput(attrs)
	case op == "execute_tool" || oi == "TOOL":
		s.Kind = spans.Tool
		s.ToolName = firstAttr(attrs, "gen_ai.tool.name", "tool.name")
		s.ToolCallID = firstAttr(attrs, "gen_ai.tool.call.id", "tool_call.id")
		s.Input = first(attrs, "gen_ai.tool.call.arguments", "input.value", "tool.parameters")
		s.Output = first(attrs, "gen_ai.tool.call.result", "output.value")
	case op == "invoke_agent" || oi == "AGENT":
		s.Kind = spans.Agent
		s.AgentName = firstAttr(attrs, "gen_ai.agent.name", "agent.name")
	}
	s.Extra = extra(sp, attrs, scope)
	return s, format.String(sp["traceId"])
}

// unixNano reads an OTLP time: nanoseconds since the epoch, as a string
// (the protobuf JSON mapping of a 64-bit integer) or a number.
func unixNano(raw jsonx.RawMessage) time.Time {
	n, err := strconv.ParseInt(text(raw), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// attributes flattens OTLP KeyValues ([{key, value: AnyValue}]) into a
// map of JSON values: strings, numbers (intValue is a string in the
// protobuf JSON mapping), booleans, arrays and key-value lists as objects.
func attributes(raw jsonx.RawMessage) map[string]jsonx.RawMessage {
	list, _ := format.SplitArray(raw)
	out := make(map[string]jsonx.RawMessage, len(list))
	for _, e := range list {
		kv := format.SplitObject(e)
		if k := format.String(kv["key"]); k != "" {
			out[k] = anyValue(kv["value"])
		}
	}
	return out
}

// anyValue converts an OTLP AnyValue to plain JSON.
func anyValue(raw jsonx.RawMessage) jsonx.RawMessage {
	v := format.SplitObject(raw)
	switch {
	case v == nil:
		return jsonx.RawMessage("null")
	case v["stringValue"] != nil:
		return v["stringValue"]
	case v["intValue"] != nil:
		if n, err := strconv.ParseInt(text(v["intValue"]), 10, 64); err == nil {
			return jsonx.RawMessage(strconv.FormatInt(n, 10))
		}
	case v["doubleValue"] != nil:
		if f, ok := format.Float(v["doubleValue"]); ok {
			return jsonx.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case v["boolValue"] != nil:
		return v["boolValue"]
	case v["bytesValue"] != nil:
		return v["bytesValue"]
	case v["arrayValue"] != nil:
		vals, _ := format.SplitArray(format.SplitObject(v["arrayValue"])["values"])
		out := make([][]byte, len(vals))
		for i, e := range vals {
			out[i] = anyValue(e)
		}
		return format.JoinArray(out)
	case v["kvlistValue"] != nil:
		m := attributes(format.SplitObject(v["kvlistValue"])["values"])
		if e := format.Extra(m); e != nil {
			return jsonx.RawMessage(*e)
		}
		return jsonx.RawMessage("{}")
	}
	return jsonx.RawMessage("null")
}

// first is the first of keys that the attributes hold.
func first(attrs map[string]jsonx.RawMessage, keys ...string) jsonx.RawMessage {
	for _, k := range keys {
		if v, ok := attrs[k]; ok && !format.IsNull(v) {
			return v
		}
	}
	return nil
}

// usage reads token counts in the GenAI conventions (input tokens include
// cached ones), else OpenInference's llm.token_count.*.
func usage(attrs map[string]jsonx.RawMessage) format.Usage {
	num := func(keys ...string) *int64 {
		for _, k := range keys {
			if n, err := strconv.ParseInt(firstAttr(attrs, k), 10, 64); err == nil {
				return model.Int(n)
			}
		}
		return nil
	}
	return format.Usage{
		Prompt:     num("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"),
		Completion: num("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"),
		Cached:     num("gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details.cache_read"),
		Reasoning:  num("gen_ai.usage.reasoning.output_tokens", "llm.token_count.completion_details.reasoning"),
	}
}

// llmInput is a model call's input messages: gen_ai.input.messages after
// gen_ai.system_instructions, else OpenInference's llm.input_messages.*,
// else input.value.
func llmInput(attrs map[string]jsonx.RawMessage) jsonx.RawMessage {
	if in := first(attrs, "gen_ai.input.messages"); in != nil {
		sys := spans.Decoded(first(attrs, "gen_ai.system_instructions"))
		if sys == nil {
			return in
		}
		msgs, ok := format.SplitArray(spans.Decoded(in))
		if !ok {
			return in
		}
		system := jsonx.RawMessage(`{"role":"system","parts":` + string(sys) + `}`)
		if len(sys) > 0 && sys[0] == '"' {
			system = jsonx.RawMessage(`{"role":"system","content":` + string(sys) + `}`)
		}
		return format.JoinArray(append([][]byte{system}, msgs...))
	}
	if m := openInferenceMessages(attrs, "llm.input_messages."); m != nil {
		return m
	}
	return first(attrs, "input.value")
}

func llmOutput(attrs map[string]jsonx.RawMessage) jsonx.RawMessage {
	if out := first(attrs, "gen_ai.output.messages"); out != nil {
		return out
	}
	if m := openInferenceMessages(attrs, "llm.output_messages."); m != nil {
		return m
	}
	return first(attrs, "output.value")
}

// openInferenceMessages rebuilds the messages OpenInference flattens into
// attributes (<prefix><i>.message.role, .content, .contents.<j>.message_content.text,
// .tool_calls.<k>.tool_call.{id, function.name, function.arguments},
// .tool_call_id) as Chat Completions messages.
func openInferenceMessages(attrs map[string]jsonx.RawMessage, prefix string) jsonx.RawMessage {
	type toolCall struct {
		ID       string `json:"id,omitempty"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type message struct {
		Role       string     `json:"role"`
		Content    string     `json:"content,omitempty"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
		contents   map[int]string
		calls      map[int]*toolCall
	}
	msgs := map[int]*message{}
	for k, v := range attrs {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		idx, field, ok := strings.Cut(rest, ".message.")
		i, err := strconv.Atoi(idx)
		if !ok || err != nil || i < 0 || i > 1<<16 {
			continue
		}
		m := msgs[i]
		if m == nil {
			m = &message{contents: map[int]string{}, calls: map[int]*toolCall{}}
			msgs[i] = m
		}
		val := text(v)
		switch {
		case field == "role":
			m.Role = val
		case field == "content":
			m.Content = val
		case field == "tool_call_id":
			m.ToolCallID = val
		case strings.HasPrefix(field, "contents."):
			j, sub, _ := strings.Cut(strings.TrimPrefix(field, "contents."), ".")
			if n, err := strconv.Atoi(j); err == nil && sub == "message_content.text" {
				m.contents[n] = val
			}
		case strings.HasPrefix(field, "tool_calls."):
			j, sub, _ := strings.Cut(strings.TrimPrefix(field, "tool_calls."), ".tool_call.")
			n, err := strconv.Atoi(j)
			if err != nil {
				continue
			}
			tc := m.calls[n]
			if tc == nil {
				tc = &toolCall{}
				m.calls[n] = tc
			}
			switch sub {
			case "id":
				tc.ID = val
			case "function.name":
				tc.Function.Name = val
			case "function.arguments":
				tc.Function.Arguments = val
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	var out []*message
	for _, i := range sortedKeys(msgs) {
		m := msgs[i]
		if m.Content == "" {
			var parts []string
			for _, j := range sortedKeys(m.contents) {
				parts = append(parts, m.contents[j])
			}
			m.Content = strings.Join(parts, "\n")
		}
		for _, j := range sortedKeys(m.calls) {
			m.ToolCalls = append(m.ToolCalls, *m.calls[j])
		}
		out = append(out, m)
	}
	b, err := jsonx.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// extra keeps what a span says besides its messages: its kind, status
// message, scope and the attributes that are not message content (which
// the step and call columns hold, and which can be large).
func extra(sp, attrs map[string]jsonx.RawMessage, scope map[string]jsonx.RawMessage) *string {
	rest := map[string]jsonx.RawMessage{}
	for k, v := range attrs {
		switch {
		case k == "gen_ai.input.messages", k == "gen_ai.output.messages", k == "gen_ai.system_instructions",
			k == "gen_ai.tool.call.arguments", k == "gen_ai.tool.call.result", k == "input.value", k == "output.value",
			strings.HasPrefix(k, "llm.input_messages."), strings.HasPrefix(k, "llm.output_messages."):
		default:
			rest[k] = v
		}
	}
	out := map[string]jsonx.RawMessage{}
	if e := format.Extra(rest); e != nil {
		out["attributes"] = jsonx.RawMessage(*e)
	}
	if msg := format.SplitObject(sp["status"])["message"]; format.String(msg) != "" {
		out["status_message"] = msg
	}
	if name := scope["name"]; format.String(name) != "" {
		out["scope"] = name
	}
	if k := sp["kind"]; k != nil {
		out["span_kind"] = k
	}
	return format.Extra(out)
}
