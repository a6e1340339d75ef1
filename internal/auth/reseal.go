package auth

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// resealBatch is how many seeds one page of a re-encryption pass reads.
const resealBatch = 500

// ResealResult counts a re-encryption pass.
type ResealResult struct {
	// Checked is how many sealed values were looked at, Resealed how many
	// were under a previous key and now are under the current one.
	Checked  int `json:"checked"`
	Resealed int `json:"resealed"`
}

// ResealSecrets re-encrypts every stored TOTP seed that a previous secret
// sealed under the current one, a page at a time, so that the previous
// secret can then be dropped. A seed changed meanwhile (re-enrolled) is
// skipped: the compare-and-set finds it no longer equal. Running it twice,
// or beside serve, is safe.
func (s *Service) ResealSecrets(ctx context.Context) (ResealResult, error) {
	var res ResealResult
	after := uuid.Nil
	for {
		page, err := s.factors.SealedSecrets(ctx, after, resealBatch)
		if err != nil {
			return res, fmt.Errorf("read sealed seeds: %w", err)
		}
		for _, sec := range page {
			res.Checked++
			after = sec.UserID
			if !s.keyring.Stale(sec.Secret) {
				continue
			}
			fresh, err := s.keyring.Reseal(sec.Secret, secretContext(sec.UserID))
			if err != nil {
				return res, fmt.Errorf("reseal the seed of %s: %w", sec.UserID, err)
			}
			ok, err := s.factors.ReplaceSealedSecret(ctx, sec.UserID, sec.Secret, fresh)
			if err != nil {
				return res, fmt.Errorf("store the seed of %s: %w", sec.UserID, err)
			}
			if ok {
				res.Resealed++
			}
		}
		if len(page) < resealBatch {
			return res, nil
		}
	}
}
