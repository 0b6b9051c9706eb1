package openai

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// This file validates a rollout line and splits its envelope and payload in
// one pass. Validating (jsonx.Valid), then finding the envelope's members,
// then splitting the payload read every byte of a line three times, which
// dominated the Codex profile. The scanner (format.ScanMembersWithin)
// accepts what jsonx.Valid accepts, but gives up on lines that are not
// objects with a string type; such a line takes the general path, so
// results and errors are those of that path whatever the input.

// scanRolloutLine validates line and returns its envelope with the
// payload's members appended to members[:0] (payloadObject false when the
// payload is absent or not an object). ok is false when the line is not a
// valid object with a string type.
func scanRolloutLine(line []byte, members format.Members) (env rolloutLine, out format.Members, payloadObject, ok bool) {
	b := line
	i := jsonx.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, members[:0], false, false
	}
	var buf [8]format.Member // the envelope's members: three, as Codex writes it
	var top format.Members
	i, top, out, payloadObject, ok = format.ScanMembersWithin(b, i, 0, buf[:0], "payload", members[:0])
	if !ok || jsonx.SkipWS(b, i) != len(b) {
		return env, out, false, false
	}
	typ := top.Get("type")
	if typ == nil || typ[0] != '"' {
		return env, out, false, false
	}
	env.Type, env.Timestamp, env.Payload = symbol(typ), top.Get("timestamp"), top.Get("payload")
	return env, out, payloadObject, true
}

// scanChatRecord validates a chat record and splits it into s.top, and its
// messages into s.messages (listed false when they are not an array), in
// one pass, as decodeObject and chatMessages do in several. ok is false
// when raw is not a valid object; decodeObject then says why.
func scanChatRecord(raw []byte, s *scratch) (top object, listed, ok bool) {
	i := jsonx.SkipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return object{}, false, false
	}
	var end int
	end, s.top, listed, ok = format.ScanMembersWithinList(raw, i, 0, s.top[:0], "messages", &s.messages)
	if !ok || jsonx.SkipWS(raw, end) != len(raw) {
		return object{}, false, false
	}
	return object{members: s.top}, listed, true
}
