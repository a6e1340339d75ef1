package audit_test

import (
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/storetest"
)

func TestRecordAndList(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	log := audit.New(storetest.Open(t).Audit(), func() time.Time { return now })

	for i, actor := range []string{"os:alice", "admin:42", "os:alice"} {
		now = now.Add(time.Minute)
		err := log.Record(ctx, audit.Entry{Actor: actor, Action: "session.revoke", Target: "user:u1", Reason: "support ticket", Details: map[string]string{"n": string(rune('a' + i))}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Record(ctx, audit.Entry{Action: "x"}); err == nil {
		t.Fatal("entry without actor accepted")
	}

	all, err := log.List(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Details["n"] != "c" || !all[0].At.Equal(now) {
		t.Fatalf("list = %+v, want 3 entries newest first", all)
	}
	alice, _ := log.List(ctx, audit.Filter{Actor: "os:alice"})
	if len(alice) != 2 {
		t.Fatalf("actor filter: got %d entries, want 2", len(alice))
	}
	recent, _ := log.List(ctx, audit.Filter{Since: now.Add(-time.Minute)})
	if len(recent) != 2 {
		t.Fatalf("since filter: got %d entries, want 2", len(recent))
	}
}
