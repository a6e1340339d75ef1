package gamemap

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseLayoutIsStrict(t *testing.T) {
	good, err := json.MarshalIndent(Generate(Long, 3), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseLayout(good)
	if err != nil || !reflect.DeepEqual(back, Generate(Long, 3)) {
		t.Fatalf("a generated layout does not round-trip: %v", err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "the input is empty; a layout is one JSON object"},
		{" \n\t", "the input is empty"},
		{"[]", "the input holds a JSON array, not a layout"},
		{"null", "the input holds null, not a layout"},
		{"42", "the input holds a number, not a layout"},
		{`"x"`, "the input holds a string, not a layout"},
		{"true", "the input holds a boolean, not a layout"},
		{"{", "line 1, column 2: the JSON ends too early"},
		{"{\n\"a\" 1}", "line 2, column 5: invalid character '1' after object key"},
		{"nul", "line 1, column 4: the JSON ends too early"},
		{"{}{}", "line 1, column 3: unexpected data after the JSON value"},
		{"{}\n x", "line 2, column 2: unexpected data after the JSON value"},
		{`{"spwan":1}`, `the top level: unknown field "spwan" (known: version, size, seed,`},
		{`{"lanes":[{},{"spwan":{}}]}`, `lanes[1]: unknown field "spwan"`},
		{`{"lanes":[{"spawn":{"x":"3"}}]}`, `lanes[0].spawn.x: want an integer, got the string "3"`},
		{`{"lanes":{}}`, "lanes: want an array, got an object"},
		{`{"buildZones":[{"laneIds":[true]}]}`, "buildZones[0].laneIds[0]: want an integer, got true"},
		{`{"size":7}`, "size: want a string, got the number 7"},
		{`{"seed":5}`, `seed: want a decimal number in a string (like "42"), got the number 5`},
		{`{"seed":"-1"}`, `seed: want a decimal number from 0 to 18446744073709551615, got "-1"`},
		{`{"seed":"18446744073709551616"}`, "seed: want a decimal number from 0"},
		{`{"width":1.5}`, "width: want an integer that fits 64 bits, got 1.5"},
		{`{"width":1e400}`, "width: want an integer"},
		{`{"overlapCells":[[1,2]]}`, "overlapCells[0]: want an object, got an array"},
	} {
		_, err := ParseLayout([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLayout(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	// null leaves the zero value, as encoding/json does.
	if l, err := ParseLayout([]byte(`{"lanes":null,"width":null}`)); err != nil || l.Lanes != nil || l.Width != 0 {
		t.Errorf("nulls: %+v %v", l, err)
	}
}

func TestParsePlacementsIsStrict(t *testing.T) {
	ps, err := ParsePlacements([]byte(` [{"kind":"trap","cell":{"x":5,"y":7}}, {"kind":"tower","cell":{"x":0,"y":0}}] `))
	if err != nil || !reflect.DeepEqual(ps, []Placement{{Trap, GridPoint{5, 7}}, {Tower, GridPoint{0, 0}}}) {
		t.Fatalf("good list: %v %v", ps, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "the input is empty; a list of placements is a JSON array"},
		{`{"kind":"trap"}`, "the input holds a JSON object, not a list of placements"},
		{`[{"kind":"trap","cel":{}}]`, `[0]: unknown field "cel" (known: kind, cell)`},
		{`[{"kind":"trap","cell":{"x":1,"y":"2"}}]`, `[0].cell.y: want an integer, got the string "2"`},
		{`[{"kind":1}]`, "[0].kind: want a string, got the number 1"},
		{"[\n{\"kind\":\"trap\"},\n]", "line 3, column 1: invalid character ']'"},
	} {
		_, err := ParsePlacements([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePlacements(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
