package events

import (
	"context"
	"maps"

	"github.com/zeebo/xxh3"

	"github.com/pchronicle/pchronicle/internal/format/canonical"
)

// index is the stream state appends are validated against: every stored
// event_id and the highest stored seq of every session. event ids are kept
// as 128-bit hashes, which bounds memory per event and makes a false
// "duplicate" practically impossible.
type index struct {
	factWatermark int64
	ids           map[xxh3.Uint128]struct{}
	lastSeq       map[string]int64
}

// keyRow is the subset of event columns the index needs; reading it skips
// the payload.
type keyRow struct {
	EventID   string `parquet:"event_id"`
	SessionID string `parquet:"session_id"`
	Seq       int64  `parquet:"seq"`
}

func newIndex() *index {
	return &index{ids: map[xxh3.Uint128]struct{}{}, lastSeq: map[string]int64{}}
}

// clone copies x so a failed append never leaves a half-updated cache.
func (x *index) clone() *index {
	return &index{factWatermark: x.factWatermark, ids: maps.Clone(x.ids), lastSeq: maps.Clone(x.lastSeq)}
}

// catchUp adds the facts of r that x has not seen: the segments holding
// events appended after x's fact watermark. Adding is idempotent, so a
// compacted segment that also holds already-indexed events is harmless.
func (x *index) catchUp(ctx context.Context, r *Revision) error {
	if r.FactWatermark == x.factWatermark {
		return nil
	}
	for i := range r.Segments {
		seg := &r.Segments[i]
		if seg.MaxFactRevision <= x.factWatermark {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := readSegment(r.Path(seg), func(rows []keyRow) error {
			for _, k := range rows {
				x.add(k.EventID, k.SessionID, k.Seq)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	x.factWatermark = r.FactWatermark
	return nil
}

func (x *index) add(eventID, session string, seq int64) {
	x.ids[xxh3.HashString128(eventID)] = struct{}{}
	if last, ok := x.lastSeq[session]; !ok || seq > last {
		x.lastSeq[session] = seq
	}
}

func (x *index) known(eventID string) bool {
	_, ok := x.ids[xxh3.HashString128(eventID)]
	return ok
}

// validator returns a canonical stream Validator that continues the stored
// stream.
func (x *index) validator() *canonical.Validator {
	v := canonical.NewValidator()
	v.Seed(x.lastSeq, x.known)
	return v
}
