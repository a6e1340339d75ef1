package httpapi

import "github.com/towerdefence/platformctl/internal/role"

// AdminRoutePermissions is the role matrix: every administrator plane
// route and the permission it needs.
func AdminRoutePermissions() map[string]role.Permission {
	out := map[string]role.Permission{}
	for _, rt := range adminRoutes(Deps{}) {
		out[rt.pattern] = rt.perm
	}
	return out
}
