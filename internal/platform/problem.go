package platform

import "fmt"

// Problem is one thing wrong with a document a person wrote — fixtures, a
// live-ops configuration: where (the file, when the document spans several,
// and a dotted path into it) and what. Validators collect every Problem
// rather than stop at the first, so the author fixes them all in one pass.
type Problem struct {
	File    string `json:"file,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// String renders the problem as [file: ][path: ]message.
func (p Problem) String() string {
	out := p.Message
	if p.Path != "" {
		out = p.Path + ": " + out
	}
	if p.File != "" {
		out = p.File + ": " + out
	}
	return out
}

// Problems collects Problems.
type Problems []Problem

// Add records a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}
