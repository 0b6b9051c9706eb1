package early

import "testing"

// wantedCases are command lines and whether they start a worker early.
var wantedCases = []struct {
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
}

func TestWanted(t *testing.T) {
	for _, c := range wantedCases {
		if got := wanted(c.args); got != c.want {
			t.Errorf("wanted(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
