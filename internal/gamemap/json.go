package gamemap

import "encoding/json"

// ParseLayout decodes a layout from JSON, as the API serves it or a
// designer edited it. It checks only that the JSON fits the types; Analyze
// judges the layout.
func ParseLayout(data []byte) (MapLayout, error) {
	var l MapLayout
	err := json.Unmarshal(data, &l)
	return l, err
}
