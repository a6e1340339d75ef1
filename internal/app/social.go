package app

import (
	"net/http"
	"os"

	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/social"
	"github.com/towerdefence/platformctl/internal/store"
)

// newSocial reads the providers file and their secrets and returns the
// provider and guest sign-in service. Every call to a provider goes
// through one client whose timeout is the provider timeout.
func newSocial(cfg *config.Config, a *auth.Service, db *store.DB) (*auth.Social, error) {
	getenv := cfg.Social.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfgs, err := social.LoadFile(cfg.Social.ProvidersFile, getenv)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: cfg.Social.ProviderTimeout}
	providers, err := social.New(cfgs, getenv, client)
	if err != nil {
		return nil, err
	}
	return auth.NewSocial(a, db.Social(), providers, auth.SocialOptions{Timeout: cfg.Social.ProviderTimeout, GuestsPerIP: cfg.Social.GuestIP}), nil
}
