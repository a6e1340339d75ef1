package cli

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

func seedReport(t *testing.T, r result) seed.Report {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("seed fixtures: code %d\nstderr: %s", r.code, r.stderr)
	}
	var rep seed.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("seed fixtures --output json: %v\n%s", err, r.stdout)
	}
	return rep
}

func TestSeedFixtures(t *testing.T) {
	ctx := t.Context()
	env := testEnv(t)
	if r := run(t, ctx, env, "migrate", "up"); r.code != 0 {
		t.Fatalf("migrate up: %d %s", r.code, r.stderr)
	}
	actions := func(rep seed.Report) map[string]string {
		out := map[string]string{}
		for _, it := range rep.Items {
			out[it.Item] = it.Action
		}
		return out
	}
	dry := seedReport(t, run(t, ctx, env, "seed", "fixtures", "--dry-run", "--output", "json"))
	if !dry.DryRun || actions(dry)["catalog"] != seed.ActionPublished || actions(dry)["world/player/ada"] != seed.ActionApplied {
		t.Fatalf("dry run: %+v", dry)
	}
	first := seedReport(t, run(t, ctx, env, "seed", "fixtures", "--output", "json"))
	if got := actions(first); got["catalog"] != seed.ActionPublished || got["liveops"] != seed.ActionPublished || got["world/lobby/grace-custom"] != seed.ActionApplied {
		t.Fatalf("first run after a dry run: %v (did the dry run write?)", got)
	}
	r := run(t, ctx, env, "seed", "fixtures")
	if r.code != 0 || !strings.Contains(r.stderr, "nothing changed") || !strings.Contains(r.stdout, "unchanged") {
		t.Fatalf("second run: code %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if prod := run(t, ctx, env, "seed", "fixtures", "--skip-world", "--output", "json"); !strings.Contains(prod.stderr, "skipping the development world") {
		t.Errorf("--skip-world: %s", prod.stderr)
	}
}

// copyFixtures writes the built-in fixtures to a directory for editing.
func copyFixtures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(fixtures.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, p), 0o755)
		}
		raw, err := fs.ReadFile(fixtures.FS(), p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), raw, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSeedFixturesListsProblems(t *testing.T) {
	ctx := t.Context()
	dir := copyFixtures(t)
	path := filepath.Join(dir, "world", "development.yaml")
	raw, _ := os.ReadFile(path)
	broken := strings.Replace(string(raw), "- [ada, alan]", "- [ada, alonzo]", 1)
	broken = strings.Replace(broken, "code: TD1082WC0830C0P60G10DJG7K1SVT2G", "code: TD1082WC0830C0P60G10DJG7K1SVT2H", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	if r := run(t, ctx, env, "migrate", "up"); r.code != 0 {
		t.Fatalf("migrate up: %d %s", r.code, r.stderr)
	}
	r := run(t, ctx, env, "seed", "fixtures", "--dir", dir)
	if r.code != ExitUsage {
		t.Fatalf("code %d, want %d\nstderr %s", r.code, ExitUsage, r.stderr)
	}
	for _, want := range []string{`world/development.yaml: friendships[1]: unknown player "alonzo"`, "world/development.yaml: players[0].decks[0]: bad deck code", "2 problem(s)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r := run(t, ctx, testEnv(t), "seed", "fixtures", "--dir", filepath.Join(dir, "nope")); r.code != ExitUsage {
		t.Errorf("missing --dir: code %d", r.code)
	}
}

// TestServeSeedsAnEmptyEmbeddedDatabase starts serve on a fresh SQLite
// database and finds the catalog and the development world in place.
func TestServeSeedsAnEmptyEmbeddedDatabase(t *testing.T) {
	env := testEnv(t)
	if strings.HasPrefix(env["PLATFORM_DATABASE_URL"], "postgres") {
		t.Skip("serve seeds only the embedded SQLite database by itself")
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() { done <- run(t, ctx, env, "serve", "--addr", addr) }()
	defer func() { cancel(); <-done }()
	testwait.Nil(t, 20*time.Second, func() error {
		res, err := http.Get("http://" + addr + "/api/content/catalog")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("catalog on a fresh serve: %d", res.StatusCode)
		}
		return nil
	})
	// The development world is there too.
	db, err := store.Open(t.Context(), env["PLATFORM_DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := storetest.Count(t, db, "SELECT COUNT(*) FROM users WHERE realm = 'player' AND email LIKE '%@example.test'"); n != 6 {
		t.Errorf("sample players after a fresh serve: %d, want 6", n)
	}
}
