package inspect

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// FuzzNormalize: any bytes, read as either layout, give Storylines with an
// identity and unique step ids, or a located ParseError; never a panic.
// The corpus holds the JSON samples, small zips built here (deflate, zstd,
// chunked) and the .eval test log.
func FuzzNormalize(f *testing.F) {
	for _, name := range sampleFiles {
		data := readSample(f, name)
		if len(data) > 64<<10 {
			continue // keep the corpus quick to mutate; the small samples cover both layouts
		}
		f.Add(data)
	}
	f.Add([]byte(jsonLog(mVersion, mStatus, mEval, mPlan, mSamples, mReductions)))
	f.Add([]byte(jsonLog(mSamples, mEval)))
	f.Add([]byte(`{"eval":{"task":"t"},"samples":[{"id":1,"epoch":1,"scores":{"s":{"value":NaN}},"messages":[{"role":"assistant","content":"attachment://x"}],"attachments":{"x":"y"}}]}`))
	f.Add(testLog(f))
	f.Add(buildZip(f, entry{"samples/1_epoch_1.json", `{"id":1,"epoch":1,"messages":[{"role":"user","content":"q"}]}`, zstdMethod}))
	f.Add(buildZip(f, entry{"samples/a_epoch_1/sample.json", `{"id":"a","epoch":1,"message_refs":[[0,1]]}`, zip.Deflate},
		entry{"samples/a_epoch_1/messages/0.json", `[{"role":"user","content":"attachment://0"}]`, zip.Store},
		entry{"samples/a_epoch_1/attachments/0.json", `["x"]`, zstdMethod}))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.eval", data, false))
		for _, layout := range []string{LayoutJSON, LayoutEval} {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error {
					if err := testutil.CheckIdentity(sl); err != nil {
						t.Fatal(err)
					}
					return nil
				})
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s: error is not a ParseError: %v", layout, err)
			}
		}
	})
}

// FuzzSplitSample: splitSample, which splits a sample and its messages,
// events and attachments in one pass, finds what splitting each level
// again finds (referenceSample, the reader it replaced), for any valid
// JSON object.
func FuzzSplitSample(f *testing.F) {
	for _, name := range sampleFiles {
		if strings.HasSuffix(name, ".json") {
			samples, _ := format.SplitArray(format.SplitObject(readSample(f, name))["samples"])
			for _, s := range samples {
				f.Add(s)
			}
		}
	}
	for _, s := range []string{`{}`, `{"id":1,"epoch":1}`, ` { "messages" : [ {"role":"user"} , 1 , null ] , "events":[{"event":"model","input":[{"id":"a"}]},"x",[]] } `,
		`{"events":[{"event":"a"}],"events":"x","messages":[{"id":1}],"messages":{"a":1},"attachments":{"h":"v"},"attachments":{"g":1,"h":"w"}}`,
		`{"transcript":{"events":[{"event":"t"}],"content":{"h":"x","k":2}},"attachments":null,"events":null}`,
		`{"transcript":{"events":[{"event":"t"}],"content":{"h":"x"}},"attachments":{"a":"b"}}`,
		`{"ev\u0065nts":[{"\u0065vent":"e","event":"f"}],"attachments":{"\u0068":"\"\\u00e9\"","h":"2","h":3},"events_data":{"messages":[{"id":"p"}]}}`,
		"{\"events\":[{\"\xff\":1}],\"\xfe\":[\"]\"]}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		i := jsonx.SkipWS(data, 0)
		if !json.Valid(data) || i >= len(data) || data[i] != '{' {
			return
		}
		got, end := splitSample(data, i, LayoutJSON, nil)
		if rest := bytes.TrimSpace(data[end:]); len(rest) > 0 {
			t.Fatalf("the split ends before %q", rest)
		}
		want := referenceSample(format.SplitObject(data))
		if !maps.EqualFunc(got.fields, want.fields, sameRaw) {
			t.Fatalf("fields %q, want %q", got.fields, want.fields)
		}
		if !maps.EqualFunc(got.attach.byHash, want.attach.byHash, sameRaw) {
			t.Fatalf("attachments %q, want %q", got.attach.byHash, want.attach.byHash)
		}
		for _, pair := range [][2][][]byte{{got.messages, want.messages}, {got.events, want.events}, {got.pool, want.pool}} {
			if !slices.EqualFunc(pair[0], pair[1], bytes.Equal) {
				t.Fatalf("elements %q, want %q", pair[0], pair[1])
			}
		}
		for _, elems := range []struct {
			list *format.List
			want [][]byte
		}{{got.messageList, want.messages}, {got.eventList, want.events}} {
			for k, raw := range elems.want {
				wantMembers, wantObject := format.AppendMembers(nil, raw)
				gotMembers, gotObject := wantMembers, wantObject
				if elems.list != nil {
					gotMembers, gotObject = elems.list.Object(k)
				}
				if gotObject != wantObject || !slices.EqualFunc(gotMembers, wantMembers, func(a, b format.Member) bool {
					return bytes.Equal(a.Name, b.Name) && bytes.Equal(a.Val, b.Val)
				}) {
					t.Fatalf("element %d of %q: members %q (object %v), want %q (%v)", k, elems.want, gotMembers, gotObject, wantMembers, wantObject)
				}
			}
		}
	})
}

func sameRaw(a, b jsonx.RawMessage) bool { return bytes.Equal(a, b) }

// referenceSample is the sample split level by level, as the adapter read
// it before splitSample.
func referenceSample(obj map[string]jsonx.RawMessage) *sampleData {
	d := &sampleData{fields: obj}
	d.messages, _ = format.SplitArray(obj["messages"])
	events, attached := obj["events"], obj["attachments"]
	if tr := format.SplitObject(obj["transcript"]); tr != nil && format.IsNull(events) {
		events = tr["events"]
		if format.IsNull(attached) {
			attached = tr["content"]
		}
	}
	d.events, _ = format.SplitArray(events)
	if pools := format.SplitObject(obj["events_data"]); pools != nil {
		d.pool, _ = format.SplitArray(pools["messages"])
	}
	d.attach.byHash = map[string]jsonx.RawMessage{}
	format.EachMember(attached, func(key string, val []byte) {
		if len(val) > 0 && val[0] == '"' {
			d.attach.byHash[key] = val
		}
	})
	return d
}

// FuzzValidDocument: a log detection validated whole is read in memory
// (readDocument); it gives what the stream reader gives the same bytes,
// Storylines and errors alike.
func FuzzValidDocument(f *testing.F) {
	for _, name := range sampleFiles {
		if data := readSample(f, name); strings.HasSuffix(name, ".json") && len(data) <= 64<<10 {
			f.Add(data)
		}
	}
	for _, members := range [][]string{{mVersion, mStatus, mEval, mPlan, mSamples, mReductions}, {mSamples, mEval}, {mSamples, mEval, mPlan, mStatus, mSamples},
		{mEval, mPlan, mStatus, mSamples, mSamples, `"samples": null`}, {mEval, mPlan, mStatus, `"samples": 3`}, {mEval, `"samples": [{"id": 1}, 2]`}, {`"samples": [[]]`}} {
		f.Add([]byte(jsonLog(members...)))
	}
	f.Add([]byte("\xef\xbb\xbf" + jsonLog(mEval, mSamples)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !format.NewProbe("f.json", data, false).Valid {
			return
		}
		read := func(valid bool) (out []string) {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f", Valid: valid}, LayoutJSON,
				func(sl *model.Storyline) error {
					b, err := json.Marshal(sl)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, string(b))
					return nil
				})
			return append(out, fmt.Sprint(err))
		}
		if got, want := read(true), read(false); !slices.Equal(got, want) {
			t.Fatalf("in memory:\n%q\nstreamed:\n%q", got, want)
		}
	})
}
