package platform

import "fmt"

// Problem is one thing wrong with a document a person wrote — fixtures, a
// live-ops configuration: where (a dotted path into it) and what.
// Validators collect every Problem rather than stop at the first, so the
// author fixes them all in one pass.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String renders the problem as path: message.
func (p Problem) String() string { return p.Path + ": " + p.Message }

// Problems collects Problems.
type Problems []Problem

// Add records a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}
