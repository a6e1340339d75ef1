package platform

// Build identifies the running binary. The values are injected at link
// time (-ldflags "-X main.version=…") and passed down from main.
type Build struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"buildTime"`
}
