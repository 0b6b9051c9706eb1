package inspect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// sampleFiles are the public Inspect logs in ../shared/samples/inspect
// (SOURCES.md there says what is odd in each).
var sampleFiles = []string{
	"docent_intercode-ctf_claude-3-5-sonnet_2-epochs.json",
	"docent_intercode-ctf_gpt-4o_subset.eval",
	"inspect_ai_2024-11-05T13-31-45-05-00_input-task.json",
	"inspect_ai_log_tool_call_error.json",
	"metr_inspect-action_small_oxdna_claude-opus-4-1.eval",
	"ts-mono_ais-decoder_gpt-5.4_zstd.eval",
	"ts-mono_log_streaming_chunked-layout.eval",
}

func readSample(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.SamplesDir(t), "inspect", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func normalizeSample(t testing.TB, name string) (string, []*model.Storyline) {
	t.Helper()
	return testutil.MustNormalize(t, New(), name, readSample(t, name))
}

func TestGolden(t *testing.T) {
	for _, name := range sampleFiles {
		t.Run(name, func(t *testing.T) {
			_, sls := normalizeSample(t, name)
			out := make([]testutil.GoldenStoryline, len(sls))
			for i, sl := range sls {
				out[i] = testutil.NewGoldenStoryline(sl)
			}
			got, err := json.MarshalIndent(out, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", "golden", name+".golden.json"), got)
		})
	}
}

// TestSampleFigures asserts per-file figures counted from the documents by
// Inspect's own rules, independently of how this adapter links things
// (a script over the unzipped entries, chunked samples put together from
// message_refs):
//
//   - storylines: samples × epochs (sample entries / samples elements);
//   - steps: Σ len(messages); calls: Σ assistant tool_calls;
//   - tool errors: tool messages with an error that answer a call;
//     orphans: tool messages whose tool_call_id no call has;
//   - reported tokens: Σ over model_usage of input + cache read + cache
//     write, of output, of cache read (ModelUsage's definition);
//   - step tokens: the same over the model events outside scorers (scorer
//     spans, or old-style step events of type scorer), which are the calls
//     that produced the conversation;
//   - reward: Σ value_to_float(first score value) over scored samples.
//
// -1 is "no sample says" (no usage, or no cache figures at all).
func TestSampleFigures(t *testing.T) {
	tests := []struct {
		file                                 string
		layout                               string
		storylines, steps, calls, toolErrors int64
		orphans                              int
		reportedPrompt, reportedCompletion   int64
		reportedCached                       int64
		prompt, completion, cached           int64
		reward                               float64
		scored                               int
		formats                              string
	}{
		{"docent_intercode-ctf_claude-3-5-sonnet_2-epochs.json", LayoutJSON, 2, 28, 11, 0, 0, 49505, 2730, 34809, 49505, 2730, 34809, 1, 2, "inspect/json"},
		{"docent_intercode-ctf_gpt-4o_subset.eval", LayoutEval, 15, 332, 121, 6, 0, 395844, 30038, -1, 395844, 30038, -1, 9, 15, "inspect/eval"},
		{"inspect_ai_2024-11-05T13-31-45-05-00_input-task.json", LayoutJSON, 1, 3, 0, 0, 0, 274, 189, -1, 53, 46, -1, 1, 1, "inspect/json"},
		{"inspect_ai_log_tool_call_error.json", LayoutJSON, 1, 11, 0, 0, 11, -1, -1, -1, -1, -1, -1, 0, 0, "inspect/json"},
		{"metr_inspect-action_small_oxdna_claude-opus-4-1.eval", LayoutEval, 6, 228, 70, 0, 0, 267701, 10660, 239400, 267701, 10660, 239400, 6, 6, "inspect/eval"},
		{"ts-mono_ais-decoder_gpt-5.4_zstd.eval", LayoutEval, 1, 26, 13, 0, 0, 122882, 5574, 114816, 122415, 5456, 114816, 0, 1, "inspect/eval"},
		{"ts-mono_log_streaming_chunked-layout.eval", LayoutEval, 4, 12, 0, 0, 0, 252, 6, -1, 252, 6, -1, 3, 4, "inspect/eval-chunked"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			layout, sls := normalizeSample(t, tt.file)
			var steps, calls, toolErrors int64
			var orphans, scored int
			var reward float64
			sum := func(acc *int64, v *int64) {
				if v != nil {
					if *acc < 0 {
						*acc = 0
					}
					*acc += *v
				}
			}
			rp, rc, rcache, p, c, cache := int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), int64(-1)
			formats := map[string]bool{}
			for _, sl := range sls {
				r := sl.Run
				formats[r.SourceFormat] = true
				steps += r.StepCount
				calls += r.ToolCallCount
				for _, tc := range sl.ToolCalls {
					if tc.ResultStatus == model.ResultError {
						toolErrors++
					}
				}
				for _, w := range sl.Warnings {
					if strings.Contains(w.Message, "matches no unanswered call") {
						orphans++
					}
				}
				sum(&rp, r.ReportedPromptTokens)
				sum(&rc, r.ReportedCompletionTokens)
				sum(&rcache, r.ReportedCachedTokens)
				sum(&p, r.PromptTokens)
				sum(&c, r.CompletionTokens)
				sum(&cache, r.CachedTokens)
				if r.Reward != nil {
					reward += *r.Reward
				}
				if r.Scores != nil {
					scored++
				}
			}
			var fs []string
			for f := range formats {
				fs = append(fs, f)
			}
			got := []any{layout, int64(len(sls)), steps, calls, toolErrors, orphans, rp, rc, rcache, p, c, cache, reward, scored, strings.Join(fs, ",")}
			want := []any{tt.layout, tt.storylines, tt.steps, tt.calls, tt.toolErrors, tt.orphans, tt.reportedPrompt, tt.reportedCompletion,
				tt.reportedCached, tt.prompt, tt.completion, tt.cached, tt.reward, tt.scored, tt.formats}
			names := []string{"layout", "storylines", "steps", "calls", "tool errors", "orphan results", "reported prompt", "reported completion",
				"reported cached", "prompt", "completion", "cached", "reward", "scored", "source formats"}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s: got %v, want %v", names[i], got[i], want[i])
				}
			}
		})
	}
}

// TestSampleStorylines pins single Storylines, counted by hand from the
// sample documents.
func TestSampleStorylines(t *testing.T) {
	type want struct {
		session, status, agent, model string
		steps, calls                  int64
		prompt, completion            int64
		reward                        float64
	}
	tests := []struct {
		file string
		want []want
	}{
		// The same sample id twice, with epochs 1 and 2; the plan's last
		// solver is the agent loop.
		{"docent_intercode-ctf_claude-3-5-sonnet_2-epochs.json", []want{
			{"59/epoch-1", model.StatusCompleted, "basic_agent_loop", "anthropic/claude-3-5-sonnet-20241022", 8, 3, 8757, 483, 1},
			{"59/epoch-2", model.StatusCompleted, "basic_agent_loop", "anthropic/claude-3-5-sonnet-20241022", 20, 8, 40748, 2247, 0},
		}},
		// Sorted by epoch, then id as Inspect sorts (1, 2 before 10);
		// sample 56 hit its message limit of 50.
		{"docent_intercode-ctf_gpt-4o_subset.eval", []want{
			{"15/epoch-1", model.StatusCompleted, "basic_agent_loop", "openai/gpt-4o", 24, 10, 16291, 2080, 0},
			{"19/epoch-1", model.StatusCompleted, "basic_agent_loop", "openai/gpt-4o", 6, 2, 938, 140, 1},
			{"31/epoch-1", model.StatusCompleted, "basic_agent_loop", "openai/gpt-4o", 10, 4, 3515, 706, 1},
			{"47/epoch-1", model.StatusCompleted, "basic_agent_loop", "openai/gpt-4o", 28, 9, 24123, 2380, 0},
			{"50/epoch-1", model.StatusCompleted, "basic_agent_loop", "openai/gpt-4o", 19, 8, 13852, 1668, 1},
			{"56/epoch-1", model.StatusTruncated, "basic_agent_loop", "openai/gpt-4o", 50, 16, 73075, 2943, 0},
		}},
		// The generate call (53 + 46 tokens) gives the assistant step its
		// tokens; the grader's call (221 + 143) stays unattributed.
		{"inspect_ai_2024-11-05T13-31-45-05-00_input-task.json", []want{
			{"1/epoch-1", model.StatusCompleted, "generate", "openai/gpt-4o-mini", 3, 0, 53, 46, 1},
		}},
		{"ts-mono_log_streaming_chunked-layout.eval", []want{
			{"1/epoch-1", model.StatusCompleted, "generate", "azureai/Meta-Llama-3-1-405B-Instruct-jqf", 3, 0, 66, 1, 0},
			{"2/epoch-1", model.StatusCompleted, "generate", "azureai/Meta-Llama-3-1-405B-Instruct-jqf", 3, 0, 60, 2, 1},
			{"1/epoch-2", model.StatusCompleted, "generate", "azureai/Meta-Llama-3-1-405B-Instruct-jqf", 3, 0, 66, 2, 1},
			{"2/epoch-2", model.StatusCompleted, "generate", "azureai/Meta-Llama-3-1-405B-Instruct-jqf", 3, 0, 60, 1, 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, sls := normalizeSample(t, tt.file)
			for i, w := range tt.want {
				r := sls[i].Run
				got := want{r.SessionID, r.Status, model.Deref(r.AgentName), model.Deref(r.AgentModelName), r.StepCount, r.ToolCallCount,
					testutil.OrMinus1(r.PromptTokens), testutil.OrMinus1(r.CompletionTokens), *r.Reward}
				if got != w {
					t.Errorf("Storyline %d:\n got %+v\nwant %+v", i, got, w)
				}
			}
		})
	}
}
