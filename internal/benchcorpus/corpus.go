// Package benchcorpus generates deterministic synthetic trajectory corpora
// for benchmarks: OpenAI chat JSONL files (one conversation per line, with
// tool calls and results) and ATIF-as-JSONL files (a header line, then one
// step per line). The content mimics real agent traffic in shape and size:
// shell commands, code, long tool outputs, token metrics.
package benchcorpus

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Corpus describes generated files.
type Corpus struct {
	Dir        string
	OpenAI     []string // chat JSONL files
	ATIF       []string // ATIF-as-JSONL files
	Bytes      int64
	Storylines int64
	Steps      int64
}

// Files returns every generated file.
func (c *Corpus) Files() []string { return append(append([]string(nil), c.OpenAI...), c.ATIF...) }

// Generate writes about totalBytes of corpus into dir, half OpenAI chat
// JSONL and half ATIF-as-JSONL, deterministically for a given seed.
func Generate(dir string, totalBytes int64, seed uint64) (*Corpus, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	c := &Corpus{Dir: dir}
	const openAIFileBytes = 16 << 20
	for i := 0; c.Bytes < totalBytes/2; i++ {
		path := filepath.Join(dir, fmt.Sprintf("chats-%04d.jsonl", i))
		n, sl, steps, err := g.writeFile(path, openAIFileBytes, 1<<30, g.chatLine)
		if err != nil {
			return nil, err
		}
		c.OpenAI = append(c.OpenAI, path)
		c.Bytes += n
		c.Storylines += sl
		c.Steps += steps
	}
	for i := 0; c.Bytes < totalBytes; i++ {
		path := filepath.Join(dir, fmt.Sprintf("trajectory-%05d.atif.jsonl", i))
		n, steps, err := g.writeATIF(path, i)
		if err != nil {
			return nil, err
		}
		c.ATIF = append(c.ATIF, path)
		c.Bytes += n
		c.Storylines++
		c.Steps += steps
	}
	return c, nil
}

type gen struct{ rng *rand.Rand }

var words = strings.Fields(`the a test file function error value return build config module
package import query table index run step tool call result agent model token cache
parse json line output input status ok failed passed python go rust shell command path
directory repository commit branch merge fix bug feature update check read write`)

func (g *gen) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[g.rng.IntN(len(words))])
	}
	return b.String()
}

func (g *gen) toolOutput() string {
	lines := 5 + g.rng.IntN(60)
	var b strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "%s:%d: %s\n", g.text(12), g.rng.IntN(900)+1, g.text(40+g.rng.IntN(60)))
	}
	return b.String()
}

// writeFile writes JSON lines produced by line until size bytes or
// maxLines lines are written.
func (g *gen) writeFile(path string, size int64, maxLines int, line func(i int) (any, int64)) (n, lines, steps int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 0; n < size && i < maxLines; i++ {
		v, st := line(i)
		b, err := jsonx.Marshal(v)
		if err != nil {
			f.Close()
			return 0, 0, 0, err
		}
		w.Write(b)
		w.WriteByte('\n')
		n += int64(len(b) + 1)
		lines++
		steps += st
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, 0, 0, err
	}
	return n, lines, steps, f.Close()
}

type msg = map[string]any

func (g *gen) chatLine(i int) (any, int64) {
	msgs := []msg{
		{"role": "system", "content": "You are a coding agent. " + g.text(200)},
		{"role": "user", "content": g.text(80 + g.rng.IntN(200))},
	}
	turns := 2 + g.rng.IntN(8)
	for t := 0; t < turns; t++ {
		id := fmt.Sprintf("call_%d_%d", i, t)
		args, _ := jsonx.Marshal(map[string]any{"cmd": g.text(30), "timeout": 30})
		msgs = append(msgs,
			msg{"role": "assistant", "content": g.text(60 + g.rng.IntN(120)), "tool_calls": []msg{{
				"id": id, "type": "function", "function": msg{"name": "bash", "arguments": string(args)}}}},
			msg{"role": "tool", "tool_call_id": id, "content": g.toolOutput()})
	}
	msgs = append(msgs, msg{"role": "assistant", "content": g.text(150)})
	return msg{"messages": msgs, "metadata": msg{"task": fmt.Sprintf("task-%d", i)}}, int64(len(msgs))
}

func (g *gen) writeATIF(path string, i int) (int64, int64, error) {
	steps := 20 + g.rng.IntN(60)
	step := 0
	size, _, _, err := g.writeFile(path, 1<<62, steps+1, func(line int) (any, int64) {
		if line == 0 {
			return msg{"__header__": true, "schema_version": "ATIF-v1.6",
				"session_id": fmt.Sprintf("bench-session-%05d", i),
				"agent":      msg{"name": "bench-agent", "version": "1.0", "model_name": "bench-model"}}, 0
		}
		step++
		if step == 1 {
			return msg{"step_id": 1, "source": "user", "message": g.text(300)}, 1
		}
		id := fmt.Sprintf("tc-%d", step)
		return msg{"step_id": step, "source": "agent", "timestamp": fmt.Sprintf("2026-01-01T00:%02d:%02dZ", step/60%60, step%60),
			"model_name": "bench-model", "message": g.text(100 + g.rng.IntN(300)), "reasoning_content": g.text(80),
			"tool_calls":  []msg{{"tool_call_id": id, "function_name": "bash", "arguments": msg{"cmd": g.text(30)}}},
			"observation": msg{"results": []msg{{"source_call_id": id, "content": g.toolOutput()}}},
			"metrics":     msg{"prompt_tokens": 1000 + g.rng.IntN(5000), "completion_tokens": 50 + g.rng.IntN(500), "cached_tokens": g.rng.IntN(1000)}}, 1
	})
	return size, int64(steps), err
}
