package storyline

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// filled returns a row with every field set, so that a column left out of
// a part shows as a difference.
func filled[T any]() T {
	var row T
	v := reflect.ValueOf(&row).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			switch p.Elem().Kind() {
			case reflect.String:
				p.Elem().SetString(v.Type().Field(i).Name)
			case reflect.Int64:
				p.Elem().SetInt(int64(i + 1))
			case reflect.Float64:
				p.Elem().SetFloat(float64(i) + 0.5)
			case reflect.Struct: // time.Time
				p.Elem().Set(reflect.ValueOf(time.Date(2025, 3, 1, 12, 0, i, 0, time.UTC)))
			}
			f.Set(p)
		}
	}
	return row
}

// readBack returns the rows of one relation's file as column values.
func readBack[T row](t *testing.T, path string) [][]any {
	t.Helper()
	var out [][]any
	if err := eachRow(context.Background(), path, func(r *T) error {
		out = append(out, model.Values(r))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLeanPartsLeaveOnlyFreeTextOut: a lean part holds every column of its
// relation with the row's values except the free-text ones, which are NULL;
// a whole part holds them all. Queries that read no free text are answered
// from lean parts, so any other column missing there would change results.
func TestLeanPartsLeaveOnlyFreeTextOut(t *testing.T) {
	sl := &model.Storyline{
		Run:       filled[model.Run](),
		Steps:     []model.Step{filled[model.Step]()},
		ToolCalls: []model.ToolCall{filled[model.ToolCall]()},
	}
	want := map[string][]any{
		model.RelRuns:      model.Values(&sl.Run),
		model.RelSteps:     model.Values(&sl.Steps[0]),
		model.RelToolCalls: model.Values(&sl.ToolCalls[0]),
	}
	for _, lean := range []bool{false, true} {
		var parts []string
		for _, rel := range Tables {
			if lean {
				rel = Lean(rel)
			}
			parts = append(parts, rel)
		}
		sc := writeScratch(t, 1, parts, sl)
		got := map[string][][]any{
			model.RelRuns:      readBack[model.Run](t, sc.Path(model.RelRuns)),
			model.RelSteps:     readBack[model.Step](t, sc.Path(model.RelSteps)),
			model.RelToolCalls: readBack[model.ToolCall](t, sc.Path(model.RelToolCalls)),
		}
		for _, rel := range Tables {
			if len(got[rel]) != 1 {
				t.Fatalf("lean %v: %d %s rows, want 1", lean, len(got[rel]), rel)
			}
			for i, c := range model.Schemas[rel] {
				w := want[rel][i]
				if lean && c.FreeText {
					w = nil
				}
				if g := got[rel][0][i]; !reflect.DeepEqual(g, w) {
					t.Errorf("lean %v: %s.%s = %#v, want %#v", lean, rel, c.Name, g, w)
				}
			}
		}
	}
}

func TestPartRelation(t *testing.T) {
	for _, p := range Parts {
		rel, lean := PartRelation(p)
		if (p == Lean(rel)) != lean || (p != rel) != lean || !slices.Contains(Tables, rel) {
			t.Errorf("PartRelation(%q) = %q, %v", p, rel, lean)
		}
	}
}
