package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/platform"
)

func newLiveOpsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "liveops",
		Short: "Show, publish and change map seeds of the live-ops configuration (live-ops staff)",
		Long: "The live-ops configuration (flags with targeting, scheduled events, banners, messages, map\n" +
			"seeds) is a series of published versions in the database; every change publishes the next\n" +
			"version and is audited. Running servers use a new version on their next request.",
	}
	cmd.AddCommand(newLiveOpsShowCmd(e), newLiveOpsPublishCmd(e), newLiveOpsSetSeedCmd(e))
	addActorFlag(cmd, e)
	return cmd
}

func newLiveOpsShowCmd(e *env) *cobra.Command {
	var output *string
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the newest live-ops version with event, banner and message statuses as of now",
		Args:  cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			snap, err := p.LiveOps(cmd.Context())
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, snap); ok {
				return err
			}
			return writeSnapshot(e, e.newView(*output), snap)
		}),
	}
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

// writeSnapshot renders a snapshot for people: a header, then one table
// per part.
func writeSnapshot(e *env, v view, s *liveops.Snapshot) error {
	w := e.stdout
	fmt.Fprintln(w, fitLine(v, fmt.Sprintf("Live-ops version %d %s, published %s by %s (%s): %s", s.Version, s.ConfigETag,
		v.when(s.PublishedAt), orDash(s.PublishedBy), s.Source, orDash(s.Description))))
	fmt.Fprintf(w, "Environment %s, catalog version %d, ETag %s\n", s.Environment, s.CatalogVersion, s.ETag)

	section := func(title string, headers []string, rows [][]string) error {
		fmt.Fprintf(w, "\n%s\n", title)
		if len(rows) == 0 {
			_, err := fmt.Fprintln(w, "(none)")
			return err
		}
		return v.print(e, headers, rows)
	}
	var rows [][]string
	for _, m := range s.MapSeeds {
		rows = append(rows, []string{string(m.Size), strconv.FormatInt(m.Seed, 10), strconv.FormatInt(m.EffectiveSeed, 10), orDash(m.OverriddenBy)})
	}
	if err := section("MAP SEEDS", []string{"SIZE", "SEED", "IN FORCE", "OVERRIDDEN BY"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, f := range s.Flags {
		rules := make([]string, 0, len(f.Rules))
		for _, r := range f.Rules {
			rules = append(rules, fmt.Sprintf("%s: %s -> %v", r.ID, audienceText(r.Audience), r.Value))
		}
		rows = append(rows, []string{f.Key, f.Type, strconv.FormatBool(f.Enabled), fmt.Sprint(f.Default), orDash(strings.Join(rules, "; "))})
	}
	if err := section("FLAGS", []string{"KEY", "TYPE", "ENABLED", "DEFAULT", "RULES"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, ev := range s.Events {
		rows = append(rows, []string{ev.ID, ev.Name, ev.Status, v.when(ev.StartAt), v.when(ev.EndAt), audienceText(ev.Audience)})
	}
	if err := section("EVENTS", []string{"ID", "NAME", "STATUS", "START", "END", "AUDIENCE"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, b := range s.Banners {
		rows = append(rows, []string{b.ID, b.Title, b.Placement, strconv.Itoa(b.Priority), b.Status, v.whenPtr(b.StartAt), v.whenPtr(b.EndAt), audienceText(b.Audience)})
	}
	if err := section("BANNERS", []string{"ID", "TITLE", "PLACEMENT", "PRIORITY", "STATUS", "START", "END", "AUDIENCE"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, m := range s.Messages {
		rows = append(rows, []string{m.ID, m.Title, m.Status, v.when(m.StartAt), v.whenPtr(m.EndAt), audienceText(m.Audience)})
	}
	if err := section("MESSAGES", []string{"ID", "TITLE", "STATUS", "START", "END", "AUDIENCE"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, h := range s.History {
		rows = append(rows, []string{strconv.Itoa(h.Version), h.Source, orDash(h.PublishedBy), v.when(h.PublishedAt), orDash(h.Description)})
	}
	return section("HISTORY", []string{"VERSION", "SOURCE", "BY", "AT", "DESCRIPTION"}, rows)
}

func audienceText(a liveops.Audience) string {
	var parts []string
	if len(a.Environments) > 0 {
		parts = append(parts, "env "+strings.Join(a.Environments, ","))
	}
	if len(a.Players) > 0 {
		parts = append(parts, "players "+strings.Join(a.Players, ","))
	}
	if a.RolloutPercent != nil {
		parts = append(parts, strconv.Itoa(*a.RolloutPercent)+"%")
	}
	if a.MinAccountAgeDays > 0 {
		parts = append(parts, fmt.Sprintf("accounts >= %dd", a.MinAccountAgeDays))
	}
	if a.MaxAccountAgeDays > 0 {
		parts = append(parts, fmt.Sprintf("accounts <= %dd", a.MaxAccountAgeDays))
	}
	if len(parts) == 0 {
		return "everyone"
	}
	return strings.Join(parts, " & ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newLiveOpsSetSeedCmd(e *env) *cobra.Command {
	var (
		output     *string
		size, seed string
		reason     string
	)
	cmd := &cobra.Command{
		Use:   "set-seed --size short|long --seed N [--reason TEXT]",
		Short: "Publish a new live-ops version with the map seed of one size changed (audited)",
		Long: "Every queue of the size plays the map generated from the new seed from the next request on,\n" +
			"on every server, unless a running event sets its own seed for that size (the command says so).",
		Args: cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			n, err := strconv.ParseInt(seed, 10, 64)
			if err != nil || n <= 0 {
				return platform.Invalid("seed", fmt.Sprintf("must be a positive integer up to %d, got %q", int64(1<<63-1), seed))
			}
			ch, err := p.SetSeed(cmd.Context(), admin.SeedInput{Size: size, Seed: n, Reason: reason})
			if err != nil {
				return err
			}
			if ch.OverriddenBy != "" {
				fmt.Fprintf(e.stderr, "note: the running event %s sets its own %s seed; queues play it until the event ends\n", ch.OverriddenBy, ch.Size)
			}
			if ok, err := writeData(e.stdout, *output, ch); ok {
				return err
			}
			if !ch.Changed {
				fmt.Fprintf(e.stderr, "the %s map seed is already %d (version %d); nothing published\n", ch.Size, ch.To, ch.Version)
			} else {
				fmt.Fprintf(e.stderr, "published live-ops version %d\n", ch.Version)
			}
			m := ch.Map
			return e.table(*output, []string{"SIZE", "FROM", "TO", "VERSION", "PATH CELLS", "BUILD CELLS", "OVERLAP", "ROUTES", "VALID"},
				[][]string{{string(ch.Size), strconv.FormatInt(ch.From, 10), strconv.FormatInt(ch.To, 10), strconv.Itoa(ch.Version),
					strconv.Itoa(m.PathCellCount), strconv.Itoa(m.BuildCellCount), strconv.Itoa(m.OverlapCellCount),
					fmt.Sprintf("%d-%d", m.ShortestRoute, m.LongestRoute), strconv.FormatBool(m.Valid)}})
		}),
	}
	cmd.Flags().StringVar(&size, "size", "", "map size: short or long")
	completeValues(cmd, "size", sizeNames...)
	cmd.Flags().StringVar(&seed, "seed", "", "the new seed, a positive integer")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	cmd.MarkFlagRequired("size") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("seed") //nolint:errcheck // the flag exists
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}
