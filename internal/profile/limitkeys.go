package profile

import "github.com/google/uuid"

// LimitKeys are the rate-limit keys of this package that name a user or
// their address, so that deleting the account can drop them.
func LimitKeys(id uuid.UUID, email string) []string {
	return []string{userKey(id), recipientKey(email)}
}
