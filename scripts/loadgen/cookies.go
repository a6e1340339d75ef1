package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

// cookiePool holds Cookie headers of players prepared outside the load
// generator (scripts/scaledata): the heavy social player first, then
// players spread over the whole database, so that requests can miss the
// database's caches as a real population's would.
type cookiePool struct {
	players []string
	admin   string
	hot     int
}

// loadCookies reads the -cookies and -admin-cookie files; both may be
// empty, and then steps that ask for them fail.
func loadCookies(path, adminPath string, hot int) (*cookiePool, error) {
	p := &cookiePool{hot: max(hot, 1)}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		p.players = strings.Fields(string(b))
		if len(p.players) < 2 {
			return nil, fmt.Errorf("%s: want the heavy player and at least one more", path)
		}
	}
	if adminPath != "" {
		b, err := os.ReadFile(adminPath)
		if err != nil {
			return nil, err
		}
		p.admin = strings.TrimSpace(string(b))
	}
	return p, nil
}

// pick returns the Cookie header of a step for virtual user user.
func (p *cookiePool) pick(kind string, user int) (string, error) {
	if kind == "admin" {
		if p.admin == "" {
			return "", fmt.Errorf(`a step wants the "admin" cookie but -admin-cookie is not set`)
		}
		return p.admin, nil
	}
	if len(p.players) == 0 {
		return "", fmt.Errorf("a step wants %q cookies but -cookies is not set", kind)
	}
	rest := p.players[1:]
	switch kind {
	case "heavy":
		return p.players[0], nil
	case "hot":
		return rest[user%min(p.hot, len(rest))], nil
	case "spread":
		return rest[rand.IntN(len(rest))], nil
	}
	return "", fmt.Errorf(`unknown cookies %q: want heavy, hot, spread or admin`, kind)
}
