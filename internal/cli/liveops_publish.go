package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/platform"
)

// maxConfigBytes bounds a configuration file: the API takes request
// bodies up to 1 MiB, so a larger file could be published on the
// database but not over HTTP.
const maxConfigBytes = 1 << 20

func newLiveOpsPublishCmd(e *env) *cobra.Command {
	var (
		output       *string
		file, reason string
	)
	cmd := &cobra.Command{
		Use:   "publish --file FILE|- [--reason TEXT]",
		Short: "Publish a whole live-ops configuration (YAML or JSON) as the next version (audited)",
		Long: "Replace the live-ops configuration with the one in FILE (- reads stdin), written in the shape\n" +
			"of fixtures/liveops/defaults.yaml: mapSeeds, flags, events, banners, messages. Every problem\n" +
			"is listed before anything is published. A configuration equal to the newest version\n" +
			"publishes nothing. To roll back, publish an earlier file again.",
		Example: "  platformctl liveops publish --file winter-event.yaml --reason \"winter event, ticket 311\"",
		Args:    cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			cfg, err := readLiveOpsConfig(e, file)
			if err != nil {
				return err
			}
			head, err := p.Publish(cmd.Context(), admin.PublishInput{Config: *cfg, Reason: reason})
			if err != nil {
				writeConfigProblems(e, err)
				return err
			}
			fmt.Fprintf(e.stderr, "live-ops version %d is the newest (%s)\n", head.Version, head.Description)
			if ok, err := writeData(e.stdout, *output, head); ok {
				return err
			}
			v := e.newView(*output)
			return v.print(e, []string{"VERSION", "ETAG", "PUBLISHED", "BY", "DESCRIPTION"},
				[][]string{{fmt.Sprint(head.Version), head.ETag, v.when(head.PublishedAt), head.PublishedBy, oneLine(head.Description)}})
		}),
	}
	cmd.Flags().StringVar(&file, "file", "", "the configuration, YAML or JSON; - reads stdin")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	cmd.MarkFlagRequired("file") //nolint:errcheck // the flag exists
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

// readLiveOpsConfig reads a configuration from path (- for stdin),
// refusing fields the configuration does not have, so a misspelt key is
// an error rather than a silently missing setting.
func readLiveOpsConfig(e *env, path string) (*liveops.Config, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, withExit(ExitUsage, fmt.Errorf("--file: %w", err))
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxConfigBytes+1))
	if err != nil {
		return nil, withExit(ExitUsage, fmt.Errorf("--file: %w", err))
	}
	if len(raw) > maxConfigBytes {
		return nil, withExit(ExitUsage, fmt.Errorf("--file: larger than %d bytes", maxConfigBytes))
	}
	var cfg liveops.Config
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return nil, withExit(ExitUsage, fmt.Errorf("--file %s: %w", path, err))
	}
	return &cfg, nil
}

// writeConfigProblems lists every problem of a refused configuration on
// stderr, one a line; the error itself names only the first. The problems
// come as the service gave them on the database and as JSON over HTTP,
// so both are read through their JSON form.
func writeConfigProblems(e *env, err error) {
	pe, ok := platform.As(err)
	if !ok || pe.Code != liveops.CodeInvalidConfig {
		return
	}
	raw, jerr := json.Marshal(pe.Details[liveops.DetailConfigProblems])
	var problems []platform.Problem
	if jerr != nil || json.Unmarshal(raw, &problems) != nil {
		return
	}
	for _, p := range problems {
		fmt.Fprintln(e.stderr, "  "+oneLine(p.String()))
	}
}
