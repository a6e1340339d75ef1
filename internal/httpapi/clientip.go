package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP returns the address of the client behind r. X-Forwarded-For is
// believed only when the peer is a configured trusted proxy; then the
// header is read from the right, skipping further trusted proxies, and the
// first address that is not one is the client. A forged entry that a
// client put at the left of the header is therefore never used.
func clientIP(r *http.Request, trusted []netip.Prefix) string {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsValid() {
		return ""
	}
	if len(trusted) == 0 || !inPrefixes(peer, trusted) {
		return peer.String()
	}
	hops := r.Header.Values("X-Forwarded-For")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			addr, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return client.String() // garbage from beyond the last trusted hop
			}
			addr = addr.Unmap()
			if !inPrefixes(addr, trusted) {
				return addr.String()
			}
			client = addr
		}
	}
	return client.String()
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}

func inPrefixes(addr netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
