package early

import "testing"

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"pchronicle", "query", "./evals", "SELECT 1"}, true},
		{[]string{"pchronicle", "find", "--session", "s1"}, true},
		{[]string{"pchronicle", "stats"}, true},
		{[]string{"pchronicle", "query", "--help"}, false},
		{[]string{"pchronicle", "stats", "./evals", "-h"}, false},
		{[]string{"pchronicle", "ls", "./evals"}, false},
		{[]string{"pchronicle", "serve", "./evals"}, false},
		{[]string{"pchronicle"}, false},
		{[]string{"/proc/self/exe"}, false}, // a worker itself
	} {
		if got := wanted(c.args); got != c.want {
			t.Errorf("wanted(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
