package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"text/template"
	"time"
)

// Plan is the load plan: the virtual users every scenario shares, the
// scenarios, the soak mix and the targets that the figures are checked
// against. It is read from a JSON file (see scripts/bench.json).
type Plan struct {
	// User describes the account of each virtual user. Its fields are
	// templates over vars (see templateData).
	User UserSpec `json:"user"`
	// Setup runs once per virtual user, before the first scenario, on
	// the user's own connection: typically a sign-up that leaves the
	// session cookie in the user's jar.
	Setup []Step `json:"setup"`
	// Scenarios run one after the other in `run` and all at once in `soak`.
	Scenarios []Scenario `json:"scenarios"`
	// Soak weights scenarios by name for the `soak` mix; a scenario not
	// named gets no connections.
	Soak map[string]int `json:"soak"`
	// Benchmarks are the Go benchmark targets checked against a
	// `go test -bench` output given with -gobench.
	Benchmarks []BenchTarget `json:"benchmarks"`
}

// UserSpec holds templates for a virtual user's credentials.
type UserSpec struct {
	Email    string `json:"email"`
	Name     string `json:"name"`
	Nickname string `json:"nickname"`
	Password string `json:"password"`
}

// Scenario is one measured workload: each iteration runs Steps in order
// on the virtual user's connection.
type Scenario struct {
	Name string `json:"name"`
	// Connections overrides -c for this scenario (for example 1 for a
	// latency figure that must not include queueing).
	Connections int `json:"connections,omitempty"`
	// Duration overrides -d for this scenario.
	Duration Duration `json:"duration,omitempty"`
	// Setup runs once per virtual user before the scenario's warm-up.
	Setup   []Step  `json:"setup,omitempty"`
	Steps   []Step  `json:"steps"`
	Targets Targets `json:"targets"`
}

// Step is one request, or a wait for the next mail to the virtual user.
type Step struct {
	// Name labels the step in the report (default METHOD PATH, or "mail").
	Name   string            `json:"name,omitempty"`
	Method string            `json:"method,omitempty"`
	Path   string            `json:"path,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	// Body is sent as JSON; string values may be templates.
	Body json.RawMessage `json:"body,omitempty"`
	// Expect lists the acceptable statuses (default 200).
	Expect []int `json:"expect,omitempty"`
	// AwaitMail waits for the next message to the user's address that
	// Capture matches (skipping others) instead of sending a request.
	AwaitMail bool `json:"awaitMail,omitempty"`
	// Capture stores the first submatch of each regular expression, found
	// in the response body (or the mail), as a var for later steps.
	Capture map[string]string `json:"capture,omitempty"`
	// ETag sends the ETag of this step's previous response as
	// If-None-Match, as a caching client does; 304 is then acceptable.
	ETag bool `json:"etag,omitempty"`
	// Cookies sends a Cookie header from the -cookies file instead of the
	// user's jar: "heavy" its first line, "hot" one of the next -hot lines
	// per virtual user, "spread" a random line of all but the first, and
	// "admin" the -admin-cookie file's.
	Cookies string `json:"cookies,omitempty"`

	name     string
	path     *text
	body     *text
	header   map[string]*text
	capture  map[string]*regexp.Regexp
	expected map[int]bool
}

// Targets are the figures an issue promises for a scenario; zero means
// no target.
type Targets struct {
	Issue     int     `json:"issue,omitempty"`
	MinRPS    float64 `json:"minRPS,omitempty"`
	MaxP50Ms  float64 `json:"maxP50Ms,omitempty"`
	MaxP99Ms  float64 `json:"maxP99Ms,omitempty"`
	MaxRSSMiB float64 `json:"maxRSSMiB,omitempty"`
	// Step names the step whose latency the targets apply to (default
	// the whole iteration).
	Step string `json:"step,omitempty"`
}

// BenchTarget is a ceiling on a Go benchmark's time per operation.
type BenchTarget struct {
	Issue int `json:"issue"`
	// Name is the benchmark's full name without the -GOMAXPROCS suffix,
	// for example BenchmarkAnalyze/short.
	Name  string `json:"name"`
	Label string `json:"label"`
	// MaxNsPerOp is the ceiling; 0 lists the figure without a target.
	MaxNsPerOp float64 `json:"maxNsPerOp,omitempty"`
}

// Duration is a time.Duration written as "10s" in JSON.
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// templateData is what step and user templates see.
type templateData struct {
	Base     string            // the server's base URL
	Run      string            // random per loadgen run, keeps accounts unique across runs
	User     int               // virtual user index
	Iter     int               // iteration of the current scenario on this user
	Email    string            // the user's current credentials
	Name     string            //
	Nickname string            //
	Password string            //
	Vars     map[string]string // captured by earlier steps of the iteration
}

// Unique is a short token unique per run, user and iteration, valid in
// nicknames (letters and digits, at most 16 characters).
func (d *templateData) Unique() string {
	return fmt.Sprintf("%s%x%x", d.Run[:6], d.User, d.Iter)
}

// LoadPlan reads and compiles a plan.
func LoadPlan(path string) (*Plan, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	if len(p.Scenarios) == 0 {
		return nil, fmt.Errorf("plan %s: no scenarios", path)
	}
	for i := range p.Setup {
		if err := p.Setup[i].compile("setup"); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for i := range p.Scenarios {
		sc := &p.Scenarios[i]
		if sc.Name == "" || seen[sc.Name] {
			return nil, fmt.Errorf("plan: scenario %d has an empty or repeated name", i)
		}
		seen[sc.Name] = true
		if len(sc.Steps) == 0 {
			return nil, fmt.Errorf("plan: scenario %s has no steps", sc.Name)
		}
		for j := range sc.Setup {
			if err := sc.Setup[j].compile(sc.Name + " setup"); err != nil {
				return nil, err
			}
		}
		for j := range sc.Steps {
			if err := sc.Steps[j].compile(sc.Name); err != nil {
				return nil, err
			}
		}
	}
	for name := range p.Soak {
		if !seen[name] {
			return nil, fmt.Errorf("plan: soak names unknown scenario %q", name)
		}
	}
	return &p, nil
}

func (s *Step) compile(where string) error {
	fail := func(err error) error { return fmt.Errorf("plan: %s: step %q: %w", where, s.displayName(), err) }
	s.name = s.displayName()
	if s.AwaitMail {
		if s.Method != "" || s.Path != "" {
			return fail(fmt.Errorf("a mail step sends no request"))
		}
	} else {
		if s.Method == "" || !strings.HasPrefix(s.Path, "/") {
			return fail(fmt.Errorf("method and an absolute path are required"))
		}
		var err error
		if s.path, err = parseTemplate(s.Path); err != nil {
			return fail(err)
		}
		if len(s.Body) > 0 {
			if s.body, err = parseTemplate(string(s.Body)); err != nil {
				return fail(err)
			}
		}
		s.header = map[string]*text{}
		for k, v := range s.Header {
			if s.header[k], err = parseTemplate(v); err != nil {
				return fail(err)
			}
		}
	}
	s.capture = map[string]*regexp.Regexp{}
	for k, v := range s.Capture {
		re, err := regexp.Compile(v)
		if err != nil {
			return fail(err)
		}
		if re.NumSubexp() < 1 {
			return fail(fmt.Errorf("capture %s needs a group", k))
		}
		s.capture[k] = re
	}
	s.expected = map[int]bool{}
	for _, st := range s.Expect {
		s.expected[st] = true
	}
	if len(s.expected) == 0 && !s.AwaitMail {
		s.expected[200] = true
	}
	if s.ETag {
		s.expected[304] = true
	}
	return nil
}

func (s *Step) displayName() string {
	switch {
	case s.Name != "":
		return s.Name
	case s.AwaitMail:
		return "mail"
	}
	return s.Method + " " + s.Path
}

// text is a template compiled once; text without actions is kept as
// bytes so the hot path of a static request never runs the template engine.
type text struct {
	static []byte
	t      *template.Template
}

func parseTemplate(src string) (*text, error) {
	if !strings.Contains(src, "{{") {
		return &text{static: []byte(src)}, nil
	}
	t, err := template.New("").Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, err
	}
	return &text{t: t}, nil
}

// render returns the text for d, using buf for dynamic text.
func (x *text) render(d *templateData, buf *bytes.Buffer) ([]byte, error) {
	if x.t == nil {
		return x.static, nil
	}
	buf.Reset()
	if err := x.t.Execute(buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
