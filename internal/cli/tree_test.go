package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// argsTakers are the leaf commands that take positional arguments, with
// how many; every other leaf takes none.
var argsTakers = map[string]int{
	"platformctl migrate create": 1,
	"platformctl mail retry":     1,
	"platformctl mail show":      1,
	"platformctl token inspect":  1,
	"platformctl users search":   1,
	"platformctl users detail":   1,
}

// Every parent command refuses an unknown subcommand with exit 2 and every
// leaf refuses arguments it does not take, across the whole command tree.
func TestEveryCommandRefusesUnknownArguments(t *testing.T) {
	root := newRootCmd(&env{getenv: func(string) string { return "" }})
	var walk func(c *cobra.Command)
	walked := 0
	walk = func(c *cobra.Command) {
		walked++
		path := strings.Fields(c.CommandPath())[1:]
		if c.HasSubCommands() {
			r := run(t, t.Context(), nil, append(path, "frobnicate")...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, `unknown command "frobnicate" for "`+c.CommandPath()+`"`) {
				t.Errorf("%s frobnicate: exit %d, stderr %q", c.CommandPath(), r.code, r.stderr)
			}
			for _, sub := range c.Commands() {
				walk(sub)
			}
			return
		}
		extra := make([]string, argsTakers[c.CommandPath()]+1)
		for i := range extra {
			extra[i] = "frobnicate"
		}
		if err := c.ValidateArgs(extra); err == nil {
			t.Errorf("%s accepts %d positional arguments; give it an Args rule (or list it in argsTakers)", c.CommandPath(), len(extra))
		}
	}
	walk(root)
	if walked < 20 {
		t.Fatalf("walked only %d commands", walked)
	}
}
