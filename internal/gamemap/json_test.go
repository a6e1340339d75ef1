package gamemap

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// checkParseLayout compares ParseLayout with json.Unmarshal on one input.
func checkParseLayout(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := ParseLayout(data)
	var want MapLayout
	wantErr := json.Unmarshal(data, &want)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("ParseLayout(%.200q) error %v, json.Unmarshal error %v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseLayout(%.200q) = %+v, json.Unmarshal gives %+v", data, got, want)
	}
}

func TestParseLayoutMatchesEncodingJSON(t *testing.T) {
	var inputs []string
	for _, size := range Sizes {
		for seed := range uint64(20) {
			l := Generate(size, seed)
			compact, _ := json.Marshal(l)
			indented, _ := json.MarshalIndent(l, "", "  ")
			inputs = append(inputs, string(compact), string(indented)+"\n")
		}
	}
	small := `{"version":1,"size":"short","seed":"42","width":3,"height":2,"lanes":[{"id":0,"width":2,"spawn":{"x":0,"y":0},"goal":{"x":1,"y":0},"centerline":[{"x":0,"y":0},{"x":1,"y":0}],"cells":[]}],"overlapCells":[],"buildZones":[{"id":0,"laneIds":[0,1],"cells":[{"x":-1,"y":2}]}]}`
	inputs = append(inputs,
		small,
		" "+small+" \t\r\n",
		strings.Replace(small, `"seed":"42"`, `"seed":"18446744073709551615"`, 1),
		strings.Replace(small, `"seed":"42"`, `"seed":"18446744073709551616"`, 1), // overflow
		strings.Replace(small, `"seed":"42"`, `"seed":"042"`, 1),
		strings.Replace(small, `"seed":"42"`, `"seed":42`, 1),
		strings.Replace(small, `"width":3`, `"width":-0`, 1),
		strings.Replace(small, `"width":3`, `"width":3.0`, 1),
		strings.Replace(small, `"width":3`, `"width":3e2`, 1),
		strings.Replace(small, `"width":3`, `"width":99999999999999999999`, 1),
		strings.Replace(small, `"width":3`, `"width":999999999999999999`, 1),
		strings.Replace(small, `"width":3`, `"Width":3`, 1),
		strings.Replace(small, `"size":"short"`, `"size":"sh\u006frt"`, 1),
		strings.Replace(small, `"size":"short"`, `"size":"<b>"`, 1),
		strings.Replace(small, `"overlapCells":[]`, `"overlapCells":null`, 1),
		strings.Replace(small, `"overlapCells":[]`, `"overlapCells":[,]`, 1),
		strings.Replace(small, `"overlapCells":[]`, `"overlapCells":[{"y":1,"x":2}]`, 1),
		strings.Replace(small, `"overlapCells":[]`, `"overlapCells":[{"x":1,"y":2,"z":3}]`, 1),
		strings.Replace(small, `"overlapCells":[]`, `"extra":true,"overlapCells":[]`, 1),
		small+"x",
		small[:len(small)-1],
		`{}`, `null`, `[]`, ``, `{"version":1}`,
	)
	for i, in := range inputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkParseLayout(t, []byte(in)) })
	}
}

func FuzzParseLayout(f *testing.F) {
	f.Add([]byte(`{"version":1,"size":"short","seed":"3","width":2,"height":2,"lanes":[{"id":0,"width":2,"spawn":{"x":0,"y":0},"goal":{"x":0,"y":0},"centerline":[{"x":0,"y":0}],"cells":[{"x":0,"y":0}]}],"overlapCells":[],"buildZones":[{"id":0,"laneIds":[0],"cells":[]}]}`))
	f.Add([]byte(`{"version":1,"size":"long","seed":"7","width":-5,"height":0,"lanes":[],"overlapCells":[],"buildZones":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkParseLayout(t, data) })
}
