package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/matchmaking"
)

func TestMatchmakingQueues(t *testing.T) {
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_MAP_SEED_SHORT", "42"), apitest.WithEnv("PLATFORM_MAP_SEED_LONG", "18446744073709551615"))
	c := srv.Client(t)

	res := c.Do("GET", "/api/matchmaking/queues", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET queues = %d %s", res.Status, res.Body)
	}
	var body matchmaking.Response
	res.Decode(t, &body)
	ids := []string{}
	for _, q := range body.Queues {
		ids = append(ids, q.ID)
	}
	if len(ids) != 5 || ids[0] != "casual-short" || ids[4] != "custom-hosted" {
		t.Errorf("queues %v", ids)
	}
	short, shortA := gamemap.GenerateAnalyzed(gamemap.Short, 42)
	long, _ := gamemap.GenerateAnalyzed(gamemap.Long, 18446744073709551615)
	gotShort, _ := json.Marshal(body.Maps.Short.Layout)
	wantShort, _ := json.Marshal(short)
	gotLong, _ := json.Marshal(body.Maps.Long.Layout)
	wantLong, _ := json.Marshal(long)
	if !bytes.Equal(gotShort, wantShort) || !bytes.Equal(gotLong, wantLong) {
		t.Error("the maps are not the configured seeds' layouts")
	}
	if body.Maps.Short.Analysis.PathCellCount != shortA.PathCellCount || !body.Maps.Long.Analysis.Valid {
		t.Errorf("analyses %+v %+v", body.Maps.Short.Analysis, body.Maps.Long.Analysis)
	}
	if !bytes.Contains(res.Body, []byte(`"seed":"18446744073709551615"`)) {
		t.Error("the long seed is not a decimal string")
	}

	etag := res.Header.Get("ETag")
	if len(etag) < 3 || etag[0] != '"' || res.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q Cache-Control %q", etag, res.Header.Get("Cache-Control"))
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		c.Header.Set("If-None-Match", inm)
		res := c.Do("GET", "/api/matchmaking/queues", nil)
		if res.Status != http.StatusNotModified || len(res.Body) != 0 || res.Header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d, %d bytes, ETag %q", inm, res.Status, len(res.Body), res.Header.Get("ETag"))
		}
	}
	c.Header.Set("If-None-Match", `"stale"`)
	if res := c.Do("GET", "/api/matchmaking/queues", nil); res.Status != http.StatusOK || res.Header.Get("ETag") != etag {
		t.Errorf("stale If-None-Match: %d", res.Status)
	}
}

// TestMapSchemasAcceptEveryAnalysis checks the documented schemas against
// what gamemap produces for broken layouts too (null routes, problems with
// and without a cell), which the queues route itself never serves.
func TestMapSchemasAcceptEveryAnalysis(t *testing.T) {
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	schema := func(name string) *openapi3.Schema { return doc.Components.Schemas[name].Value }
	l := gamemap.Generate(gamemap.Long, 3)
	l.Lanes[1].Cells = l.Lanes[1].Cells[:10]
	l.BuildZones[0].ID = 9
	a := gamemap.Analyze(l)
	if a.Valid || a.Routes[1].SmallUnitLength != nil {
		t.Fatal("the broken layout is not broken enough")
	}
	for name, v := range map[string]any{"MapLayout": l, "MapLayoutAnalysis": a, "BuildZone": l.BuildZones[0], "PathLane": l.Lanes[0], "GridPoint": l.Lanes[0].Spawn} {
		raw, _ := json.Marshal(v)
		var doc any
		json.Unmarshal(raw, &doc)
		if err := schema(name).VisitJSON(doc); err != nil {
			t.Errorf("%s does not match its schema: %v", name, err)
		}
	}
	raw, _ := json.Marshal(map[string]any{"x": 1})
	var bad any
	json.Unmarshal(raw, &bad)
	if schema("GridPoint").VisitJSON(bad) == nil {
		t.Error("GridPoint without y passed its schema")
	}
}

func TestMatchmakingQueuesGzip(t *testing.T) {
	srv := apitest.New(t)
	c := srv.Client(t)
	c.HTTP.Transport = &http.Transport{DisableCompression: true}
	plain := c.Do("GET", "/api/matchmaking/queues", nil)
	c.Header.Set("Accept-Encoding", "br;q=1.0, gzip;q=0.8")
	req, _ := http.NewRequest("GET", srv.URL+"/api/matchmaking/queues", nil)
	req.Header.Set("Accept-Encoding", "br;q=1.0, gzip;q=0.8")
	res, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("headers %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(body, plain.Body) {
		t.Fatalf("gzip body differs from the plain one (%v)", err)
	}
	etag := res.Header.Get("ETag")
	if etag == plain.Header.Get("ETag") {
		t.Error("gzip and plain bodies share a strong ETag")
	}
	c.Header.Set("If-None-Match", etag)
	if r := c.Do("GET", "/api/matchmaking/queues", nil); r.Status != http.StatusNotModified {
		t.Errorf("gzip ETag revalidation: %d", r.Status)
	}
	c.Header.Set("Accept-Encoding", "gzip;q=0")
	if r := c.Do("GET", "/api/matchmaking/queues", nil); r.Status != http.StatusOK || r.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0: %d %q", r.Status, r.Header.Get("Content-Encoding"))
	}
}
