package model

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestEveryColumnDocumented fails when a column of a row relation is missing
// from docs/query-model.md, or documented with another type: the docs are
// part of the public API.
func TestEveryColumnDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "query-model.md"))
	if err != nil {
		t.Fatal(err)
	}
	for rel, cols := range Schemas {
		section := regexp.MustCompile(`(?s)\n## ` + rel + `\n(.*?)(\n## |\z)`).FindSubmatch(doc)
		if section == nil {
			t.Errorf("docs/query-model.md has no section for %s", rel)
			continue
		}
		for _, c := range cols {
			row := regexp.MustCompile("\\| `" + regexp.QuoteMeta(c.Name) + "` \\| ([A-Z]+)").FindSubmatch(section[1])
			if row == nil {
				t.Errorf("%s.%s is not documented", rel, c.Name)
				continue
			}
			if string(row[1]) != c.SQLType {
				t.Errorf("%s.%s documented as %s, schema says %s", rel, c.Name, row[1], c.SQLType)
			}
		}
	}
}

func TestFinalizeExcludesCopiedContext(t *testing.T) {
	sl := &Storyline{Run: Run{RunID: "r", SessionID: "s"},
		Steps: []Step{
			{StepID: "1", PromptTokens: Int(10), CostUSD: Float(0.5)},
			{StepID: "2", PromptTokens: Int(99), IsCopiedContext: true},
			{StepID: "3", PromptTokens: Int(5), CompletionTokens: Int(7)},
		},
		ToolCalls: []ToolCall{{StepID: "2"}, {StepID: "3", ResultStatus: ResultOK, ResultLink: LinkByID}},
	}
	sl.Finalize("a.json")
	r := sl.Run
	if r.StepCount != 2 || r.ToolCallCount != 1 {
		t.Fatalf("counts = %d steps, %d calls; want 2, 1", r.StepCount, r.ToolCallCount)
	}
	if *r.PromptTokens != 15 || *r.CompletionTokens != 7 || r.CachedTokens != nil || *r.CostUSD != 0.5 {
		t.Fatalf("totals = %v %v %v %v", *r.PromptTokens, *r.CompletionTokens, r.CachedTokens, *r.CostUSD)
	}
	if r.Status != StatusUnknown || sl.ToolCalls[0].ResultStatus != ResultMissing || sl.ToolCalls[0].ResultLink != LinkNone {
		t.Fatalf("defaults not applied: %+v %+v", r.Status, sl.ToolCalls[0])
	}
	for _, st := range sl.Steps {
		if st.File != "a.json" || st.SessionID != "s" || st.RunID != "r" {
			t.Fatalf("identity not propagated: %+v", st)
		}
	}
}
