package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// startupError is what cmdServe returns when the server failed to start with err: nil when a signal
// (ctx ended) interrupted the startup — the operator asked serve to stop, and it did — else err.
func startupError(ctx context.Context, err error, log zerolog.Logger) error {
	if ctx.Err() != nil && errors.Is(err, context.Cause(ctx)) {
		log.Info().Err(err).Msg("stopped while starting")
		return nil
	}
	return err
}

// cmdVersion prints the module version of this binary and, when it was built from a VCS
// checkout, the revision it was built from (and "+dirty" for uncommitted changes).
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(stdout, versionString(debug.ReadBuildInfo()))
	return err
}

// versionString is the line `concord version` prints for the build info bi (ok: it exists).
func versionString(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "concord (unknown version: built without module information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	out := "concord " + v
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		out += " revision " + rev
		if dirty {
			out += "+dirty"
		}
		if at != "" {
			out += " (" + at + ")"
		}
	}
	return out + " " + bi.GoVersion
}
