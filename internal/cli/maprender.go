package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/gamemap"
)

// pictureFlags are the flags of every command that can draw a map.
type pictureFlags struct {
	path, format string
	scale        int
}

// add registers --NAME FILE, --picture-format and --scale.
func (p *pictureFlags) add(cmd *cobra.Command, name, usage string) {
	cmd.Flags().StringVar(&p.path, name, "", usage)
	cmd.Flags().StringVar(&p.format, "picture-format", "", "png or svg (default: from the file name's extension)")
	cmd.Flags().IntVar(&p.scale, "scale", gamemap.DefaultScale,
		fmt.Sprintf("pixels per cell of the picture, %d to %d", gamemap.MinScale, gamemap.MaxScale))
}

// check validates the flags before any work, so a bad flag writes nothing.
func (p *pictureFlags) check(name string) error {
	if p.path == "" {
		return nil
	}
	if p.format == "" {
		p.format = strings.TrimPrefix(strings.ToLower(filepath.Ext(p.path)), ".")
		if p.path == "-" || (p.format != "png" && p.format != "svg") {
			return usagef("--picture-format is needed when --%s does not end in .png or .svg, got %q", name, p.path)
		}
	}
	if p.format != "png" && p.format != "svg" {
		return usagef("--picture-format must be png or svg, got %q", p.format)
	}
	if p.scale < gamemap.MinScale || p.scale > gamemap.MaxScale {
		return usagef("--scale must be between %d and %d, got %d", gamemap.MinScale, gamemap.MaxScale, p.scale)
	}
	return nil
}

// draw renders the picture and writes it, atomically, to the file (or
// stdout for -); it does nothing when no file was asked for.
func (p *pictureFlags) draw(e *env, l gamemap.MapLayout, placements []gamemap.Placement) error {
	if p.path == "" {
		return nil
	}
	var buf bytes.Buffer
	opt := gamemap.RenderOptions{Scale: p.scale, Placements: placements}
	render := gamemap.SVG
	if p.format == "png" {
		if p.path == "-" && isTerminal(e.stdout) {
			return usagef("refusing to write PNG to a terminal; name a file or redirect stdout")
		}
		render = gamemap.PNG
	}
	if err := render(&buf, l, opt); err != nil {
		return usagef("%v", err) // a layout too large or small to draw
	}
	return writeOutput(e, p.path, buf.Bytes(), "picture")
}

// writeOutput writes data to stdout for "-", else to path atomically: into
// a temporary file beside it, renamed over it only once complete, so a
// failure never leaves half a file. It says on stderr what it wrote.
func writeOutput(e *env, path string, data []byte, what string) error {
	if path == "-" {
		_, err := e.stdout.Write(data)
		return err
	}
	if err := writeFileAtomic(path, data); err != nil {
		if exitCode(err) == ExitUsage {
			return err
		}
		return withExit(ExitFailure, fmt.Errorf("write %s: %w", what, err))
	}
	fmt.Fprintf(e.stderr, "wrote %s to %s\n", what, path)
	return nil
}

// writeFileAtomic writes data to path through a temporary file renamed
// over it. It refuses a path that is there but is not a regular file (a
// symbolic link, a device such as /dev/full, a directory, a pipe): the
// rename would replace the node itself rather than write into it.
func writeFileAtomic(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return usagef("refusing to replace %s: it is not a regular file (%s)", path, describeMode(fi.Mode()))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp) //nolint:errcheck // best effort; the write error is what matters
	}
	return err
}

// maxInputBytes bounds a layout or placement file: many times the
// largest layout (a 256×256 board is about 1 MiB of JSON), and small
// enough that reading it costs little memory whatever is named (a 300 MB
// file, /dev/zero).
const maxInputBytes = 16 << 20

// readInput reads a file, or stdin for "-", of at most maxInputBytes;
// past that it is a usage error.
func readInput(e *env, path string) ([]byte, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInputBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInputBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB", displayName(path), maxInputBytes>>20)
	}
	return data, nil
}

// describeMode names a file type for people.
func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// readPlacements reads a JSON list of placements strictly.
func readPlacements(e *env, flag, path string) ([]gamemap.Placement, error) {
	if path == "" {
		return nil, nil
	}
	data, err := readInput(e, path)
	if err != nil {
		return nil, usagef("read placements: %v", err)
	}
	ps, err := gamemap.ParsePlacements(data)
	if err != nil {
		return nil, usagef("%s %s: %v", flag, path, err)
	}
	return ps, nil
}

// layoutSource is how a command names its layout: --in FILE, or
// --size and --seed.
type layoutSource struct {
	size, in string
	seed     uint64
}

func (s *layoutSource) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.size, "size", "", "map size: short or long")
	completeValues(cmd, "size", sizeNames...)
	cmd.Flags().Uint64Var(&s.seed, "seed", 0, "map seed")
	cmd.Flags().StringVar(&s.in, "in", "", "use the layout in this JSON file instead (- for stdin)")
}

func (s *layoutSource) layout(cmd *cobra.Command, e *env) (gamemap.MapLayout, error) {
	switch {
	case s.in != "" && (cmd.Flags().Changed("size") || cmd.Flags().Changed("seed")):
		return gamemap.MapLayout{}, usagef("give either --in or --size and --seed")
	case s.in != "":
		return readLayout(e, s.in)
	case !cmd.Flags().Changed("seed"):
		return gamemap.MapLayout{}, usagef("--seed is required (or --in)")
	}
	sz, err := parseSizeFlag(s.size)
	if err != nil {
		return gamemap.MapLayout{}, err
	}
	return gamemap.Generate(sz, s.seed), nil
}

func newMapRenderCmd(e *env) *cobra.Command {
	var (
		src        layoutSource
		pic        pictureFlags
		placements string
	)
	cmd := &cobra.Command{
		Use:   "render (--size S --seed N | --in layout.json) --file map.png",
		Short: "Draw a map, with placements, as a PNG or SVG picture for designers",
		Long: "Draw a generated map or a layout file as a picture: each lane in its own colour (cells\n" +
			"shared by lanes striped in each lane's colour), spawns numbered by lane, the goal marked G,\n" +
			"build zones green with their ids, column and row numbers along the edges, a legend, and a\n" +
			"title with size, seed and version. --placements draws towers (white discs) and traps\n" +
			"(violet diamonds) from a JSON list like [{\"kind\":\"trap\",\"cell\":{\"x\":5,\"y\":7}}].\n" +
			"The picture is written whole or not at all; the same input gives the same bytes.",
		Example: "  platformctl map render --size long --seed 7 --file long-7.png\n" +
			"  platformctl map render --in my-layout.json --placements towers.json --file draft.svg --scale 32",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pic.path == "" {
				return usagef("--file is required (- for stdout, with --picture-format)")
			}
			if err := pic.check("file"); err != nil {
				return err
			}
			l, err := src.layout(cmd, e)
			if err != nil {
				return err
			}
			ps, err := readPlacements(e, "--placements", placements)
			if err != nil {
				return err
			}
			return pic.draw(e, l, ps)
		},
	}
	src.add(cmd)
	cmd.Flags().StringVar(&placements, "placements", "", "JSON file listing placements to draw")
	pic.add(cmd, "file", "write the picture to FILE (- for stdout)")
	return cmd
}
