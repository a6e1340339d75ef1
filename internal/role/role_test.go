package role_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want role.Role
		code string
	}{
		{"admin", role.Admin, ""},
		{" LiveOps ", role.LiveOps, ""},
		{"support", role.Support, ""},
		{"viewer", role.Viewer, ""},
		{"", "", role.CodeUnknownRole},
		{"root", "", role.CodeUnknownRole},
		{"admin ", role.Admin, ""},
	}
	for _, tc := range cases {
		got, err := role.Parse(tc.in)
		if got != tc.want || platform.ErrorCode(err) != tc.code {
			t.Errorf("Parse(%q) = %q, %v; want %q, %s", tc.in, got, err, tc.want, tc.code)
		}
	}
}

func TestPermissionTable(t *testing.T) {
	all := role.AllPermissions()
	for _, r := range role.All() {
		perms := role.Permissions(r)
		if !slices.Contains(perms, role.ConsoleRead) {
			t.Errorf("%s cannot open the console", r)
		}
		for _, p := range perms {
			if !slices.Contains(all, p) {
				t.Errorf("%s holds %s, which admin lacks", r, p)
			}
			if !r.Can(p) {
				t.Errorf("%s.Can(%s) is false", r, p)
			}
		}
	}
	if !role.Default.Can(role.AdminsWrite) {
		t.Errorf("the default role %s cannot manage administrators; the first administrator would be stuck", role.Default)
	}
	if err := role.Viewer.Check(role.LiveOpsWrite); platform.ErrorCode(err) != platform.CodeForbidden || !strings.Contains(err.Error(), "viewer") {
		t.Errorf("Viewer.Check(liveops:write) = %v", err)
	}
	if err := role.LiveOps.Check(role.LiveOpsWrite); err != nil {
		t.Errorf("LiveOps.Check(liveops:write) = %v", err)
	}
	if role.Role("ghost").Valid() || len(role.Permissions("ghost")) != 0 || role.Role("").Can(role.ConsoleRead) {
		t.Error("an unknown role grants something")
	}
	// Permissions returns a copy: callers cannot edit the table.
	p := role.Permissions(role.Viewer)
	p[0] = role.AdminsWrite
	if role.Viewer.Can(role.AdminsWrite) {
		t.Error("editing a returned list changed the table")
	}
}
