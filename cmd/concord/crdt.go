package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/signaling"
)

func cmdCRDT(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("want a subcommand: state FILE... | dump FILE | export [--data DIR] [--room ROOM]")}
	}
	switch args[0] {
	case "state":
		return crdtState(args[1:], stdin, stdout, stderr)
	case "dump":
		return crdtDump(args[1:], stdin, stdout, stderr)
	case "export":
		return crdtExport(args[1:], stdout, stderr)
	}
	if isHelpArg(args[0]) {
		return groupHelp(stderr, "crdt")
	}
	return usageError{fmt.Errorf("unknown subcommand %q (want state, dump or export)", args[0])}
}

// crdtExport writes a room's last checkpoint from a serve data directory as a main.crdt stream
// (canonical AppendState order). serve must not be running on the directory.
func crdtExport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("crdt export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "./concord-data", "the data directory of a stopped concord serve")
	room := fs.String("room", "arena", "the room")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, err := os.Stat(*data); err != nil {
		return err // do not make an empty store where there was none
	}
	st, err := durable.Open(durable.Config{Dir: *data})
	if err != nil {
		return err
	}
	defer st.Close()
	id := signaling.RoomID(*room)
	c, err := st.LoadCheckpoint(context.Background(), id)
	if errors.Is(err, durable.ErrNoCheckpoint) {
		return fmt.Errorf("room %q: no checkpoint in %s", *room, *data)
	}
	if err != nil {
		return err
	}
	out, err := durable.Canonical(id, st.Source(id), c.Data)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// crdtFiles parses the flags of `crdt NAME` (only -h) and returns its FILE arguments.
func crdtFiles(name string, args []string, stderr io.Writer) ([]string, error) {
	fs := flag.NewFlagSet("crdt "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := parseFlagsArgs(fs, args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// crdtState merges every file into one replica and prints the canonical state. Nothing is printed
// on stdout when any input is malformed.
func crdtState(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	files, err := crdtFiles("state", args, stderr)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{errors.New("want at least one FILE (- for stdin)")}
	}
	r := crdt.New(crdt.Config{})
	for _, f := range files {
		b, err := readInput(f, stdin)
		if err != nil {
			return err
		}
		if _, err := r.MergeStream(b); err != nil {
			var se *crdt.StreamError
			if errors.As(err, &se) {
				return fmt.Errorf("%s: byte offset %d: %w", f, se.Offset, se.Err)
			}
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	out, err := json.Marshal(r.StateJSON())
	if err != nil {
		return err
	}
	out = append(out, '\n')
	_, err = stdout.Write(out)
	return err
}

// crdtDump prints one line per message: offset, type, entity number/version, component,
// timestamp and data length.
func crdtDump(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	files, err := crdtFiles("dump", args, stderr)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{errors.New("want exactly one FILE (- for stdin)")}
	}
	b, err := readInput(files[0], stdin)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	var rd crdt.Reader
	var m crdt.Message
	rd.Reset(b)
	for {
		off := rd.Offset()
		err := rd.Next(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *crdt.StreamError
			if errors.As(err, &se) {
				return fmt.Errorf("%s: byte offset %d: %w", files[0], se.Offset, se.Err)
			}
			return err
		}
		fmt.Fprintf(&out, "%8d %-24s entity=%d/v%d", off, m.Type, m.Entity.Number(), m.Entity.Version())
		switch m.Type {
		case crdt.DeleteEntity:
		case crdt.DeleteEntityNetwork:
			fmt.Fprintf(&out, " network=%d", m.NetworkID)
		default:
			fmt.Fprintf(&out, " component=%d timestamp=%d", m.Component, m.Timestamp)
			if m.Type == crdt.PutComponentNetwork || m.Type == crdt.DeleteComponentNetwork {
				fmt.Fprintf(&out, " network=%d", m.NetworkID)
			}
			if m.Type.HasData() {
				fmt.Fprintf(&out, " len=%d", len(m.Data))
			}
		}
		out.WriteByte('\n')
	}
	if rd.Skipped() > 0 {
		fmt.Fprintf(&out, "(%d messages of unknown types skipped)\n", rd.Skipped())
	}
	_, err = stdout.Write(out.Bytes())
	return err
}
