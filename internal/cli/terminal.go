package cli

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// fdWriter is a writer backed by a file descriptor (an *os.File).
type fdWriter interface{ Fd() uintptr }

// isTerminal reports whether w is a terminal (asked of the terminal
// driver: /dev/null and files are not), for progress lines and prompts.
func isTerminal(w any) bool {
	f, ok := w.(fdWriter)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is the width of the terminal w writes to, or 0.
func terminalWidth(w any) int {
	f, ok := w.(fdWriter)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// envView lets termenv read the command's environment rather than the
// process's, so tests and embedders decide.
type envView struct{ getenv func(string) string }

func (v envView) Getenv(k string) string { return v.getenv(k) }
func (v envView) Environ() []string {
	var out []string
	for _, k := range []string{"TERM", "COLORTERM", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"} {
		if val := v.getenv(k); val != "" {
			out = append(out, k+"="+val)
		}
	}
	return out
}

// renderer is a lipgloss renderer for w whose colour profile follows the
// conventions: colour only on a terminal, none with NO_COLOR set (or
// CLICOLOR=0), and colour even when piped with CLICOLOR_FORCE set to
// anything but 0.
func (e *env) renderer(w io.Writer) *lipgloss.Renderer {
	out := termenv.NewOutput(w, termenv.WithEnvironment(envView{e.getenv}), termenv.WithTTY(isTerminal(w)))
	r := lipgloss.NewRenderer(w)
	r.SetColorProfile(out.EnvColorProfile())
	return r
}

// styled reports whether output to w gets colour and table borders.
func (e *env) styled(w io.Writer) bool {
	return e.renderer(w).ColorProfile() != termenv.Ascii
}
