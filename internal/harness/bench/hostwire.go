package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// wireReportEvery is how often a bench host started with HostOptions.WireOut prints its counts.
const wireReportEvery = 100 * time.Millisecond

// reportWire prints w's counts and dropped() to out as "wire packets bytes control small
// dropped" lines every wireReportEvery until ctx ends. It runs on the caller's goroutine.
func reportWire(ctx context.Context, w *wireCounter, dropped func() uint64, out io.Writer) {
	tk := time.NewTicker(wireReportEvery)
	defer tk.Stop()
	for {
		c := w.counts()
		if _, err := fmt.Fprintf(out, "wire %d %d %d %d %d\n", c.packets, c.bytes, c.control, c.small, dropped()); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// wireLines parses a bench host's "wire" lines and keeps the latest counts; other lines go to
// rest. Writes come from exec's copying goroutine, reads from the driver.
type wireLines struct {
	rest io.Writer

	mu   sync.Mutex // guards the following
	part []byte
	last wireCounts
}

func (l *wireLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := strings.IndexByte(string(l.part), '\n')
		if i < 0 {
			break
		}
		line := string(l.part[:i])
		l.part = l.part[i+1:]
		if c, ok := parseWire(line); ok {
			l.last = c
		} else {
			_, _ = io.WriteString(l.rest, line+"\n")
		}
	}
	if len(l.part) > 4096 { // a line that long is not ours
		_, _ = l.rest.Write(l.part)
		l.part = l.part[:0]
	}
	return len(p), nil
}

func (l *wireLines) counts() wireCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func parseWire(line string) (wireCounts, bool) {
	f := strings.Fields(line)
	if len(f) != 6 || f[0] != "wire" {
		return wireCounts{}, false
	}
	var v [5]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return wireCounts{}, false
		}
		v[i] = n
	}
	return wireCounts{v[0], v[1], v[2], v[3], v[4]}, true
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on every Linux port Go
// supports.
const clockTicks = 100

// procCPU returns the user+system CPU time process pid has used, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}
