package platform

// OrEmpty returns s, or an empty slice for nil: lists in JSON are [],
// never null.
func OrEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
