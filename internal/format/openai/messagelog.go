package openai

import (
	"context"
	"io"
	"strconv"

	"github.com/pchronicle/pchronicle/internal/format"
)

// messageSessionKeys name the conversation a message-per-line record
// belongs to.
var messageSessionKeys = []string{"session_id", "conversation_id", "thread_id", "sessionId", "conversationId"}

// normalizeMessageLines reads JSONL with one message per line. A
// conversation ends where the session key changes, or where a system
// (developer) message follows non-system messages. Only the current
// conversation is held in memory.
func normalizeMessageLines(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	ids := format.SessionIDs{}
	var cur *builder
	var curKey string
	var next int
	var sawOther bool
	flush := func() error {
		if cur == nil {
			return nil
		}
		sl := cur.finish(src.File)
		cur = nil
		return emit(sl)
	}
	err := format.EachLine(ctx, r, func(n int64, line []byte) error {
		m, err := decodeObject(line)
		if err != nil {
			return elementError(src, loc{line: n}, err)
		}
		_, key := firstString(mapObject(m), messageSessionKeys...)
		role := format.String(m["role"])
		system := role == "system" || role == "developer"
		if cur != nil && (key != curKey || (system && sawOther)) {
			if err := flush(); err != nil {
				return err
			}
		}
		if cur == nil {
			cur = newBuilder(layoutMessages, loc{line: n})
			cur.setIdentity(ids, key, lineID(n))
			curKey, next, sawOther = key, 0, false
		}
		cur.chatMessage(strconv.Itoa(next), loc{line: n}, mapObject(m))
		next++
		sawOther = sawOther || !system
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}
