package events

import (
	"testing"

	"github.com/google/uuid"
)

func TestNoticeStaysWithinTheNotifyLimit(t *testing.T) {
	n := Notice{Kind: KindLobby, Subject: uuid.New(), Change: "closed"}
	for range 8 { // more than the largest lobby
		n.Audience = append(n.Audience, uuid.New())
		n.Removed = append(n.Removed, uuid.New())
	}
	b, err := n.Encode()
	if err != nil || len(b) > maxNoticeBytes {
		t.Fatalf("a full lobby's notice: %d bytes, %v", len(b), err)
	}
	for range 200 {
		n.Audience = append(n.Audience, uuid.New())
	}
	if _, err := n.Encode(); err == nil {
		t.Fatal("a notice past the NOTIFY limit was accepted")
	}
}
