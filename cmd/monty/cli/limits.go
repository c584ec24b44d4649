package cli

import (
	"cmp"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/monty-go/monty/runtime"
)

// limitFlags are the flags that bound the code a command runs, one per
// limit of runtime.Limits. monty (-c, FILE, the REPL), monty mcp and
// monty serve register them with addLimitFlags, so that they are named,
// parsed and described alike; only their defaults differ (limitProfile).
// A flag's 0 is "no limit" (runtime.Unlimited), but for --max-recursion
// (the interpreter's default) and --max-result (only --max-memory bounds
// it).
//
// Limits.MaxHostTime has no flag: it counts the time of host functions,
// and these commands offer none that take time (OS calls, such as reads
// of a mount, do not count toward it).
type limitFlags struct {
	profile                limitProfile
	duration               time.Duration
	memory, output, result string
	recursion, hostCalls   int
	intBits                int64
}

// limitProfile is what differs between the commands' limit flags.
type limitProfile struct {
	// defaults are the flags' defaults; a zero MaxRecursion or MaxIntBits
	// is the interpreter's default.
	defaults runtime.Limits
	// service makes every answer bounded: --max-output and --max-result
	// take a size from 1 byte to maxAnswer, never 0 (no limit).
	service bool
	// host adds --max-host-calls.
	host bool
}

// runLimits are monty's limit flags (-c, FILE, the REPL): the library's
// defaults. mcpLimits and serveLimits are those of monty mcp and monty
// serve.
var runLimits = limitProfile{defaults: runtime.DefaultLimits(), host: true}

// maxAnswer is the largest --max-output and --max-result of a service.
const maxAnswer = 1 << 30

// maxMemory is the largest --max-memory, far above what the interpreter
// can allocate, and small enough that the runtime's hard ceiling (twice
// the limit plus 64 MiB) cannot overflow.
const maxMemory = 1 << 50

// addLimitFlags registers the limit flags of profile p on fs.
func addLimitFlags(fs *flag.FlagSet, p limitProfile) *limitFlags {
	d := p.defaults
	l := &limitFlags{profile: p}
	fs.DurationVar(&l.duration, "max-duration", d.MaxDuration, "stop the code after this much wall-clock time, sleeps and waits included, e.g. 5s"+zeroMeans("no limit", d.MaxDuration == 0))
	fs.StringVar(&l.memory, "max-memory", formatSize(d.MaxMemory), "largest interpreter heap, loaded session state included: a `SIZE` such as 64MiB or 1GiB"+zeroMeans("no limit", d.MaxMemory == 0))
	answer := zeroMeans("no limit", d.MaxOutput == 0)
	if p.service {
		answer = fmt.Sprintf(" (at most %s)", formatSize(maxAnswer))
	}
	fs.StringVar(&l.output, "max-output", formatSize(int64(d.MaxOutput)), "most print() output of one run, a `SIZE` such as 16MiB"+answer)
	if !p.service {
		answer = zeroMeans("only --max-memory bounds it", d.MaxResult == 0)
	}
	fs.StringVar(&l.result, "max-result", formatSize(d.MaxResult), "largest `SIZE` of a value leaving the sandbox (a result, a host call's arguments); never more than --max-memory"+answer)
	fs.IntVar(&l.recursion, "max-recursion", cmp.Or(d.MaxRecursion, runtime.DefaultMaxRecursion), "deepest Python call stack (0: the interpreter's default)")
	fs.Int64Var(&l.intBits, "max-int-bits", cmp.Or(d.MaxIntBits, runtime.DefaultMaxIntBits), "largest integer one operation (*, **, <<, math.factorial) may produce, in bits, so that one operation cannot run long past --max-duration (0: no limit)")
	if p.host {
		fs.IntVar(&l.hostCalls, "max-host-calls", runtime.DefaultMaxHostCalls, "most host calls of one run: file, clock and environment calls, host functions (0: no limit)")
	}
	return l
}

// zeroMeans describes a flag's 0, and says when it is the default (flag
// help shows only defaults that are not zero).
func zeroMeans(what string, isDefault bool) string {
	if isDefault {
		return " (default 0: " + what + ")"
	}
	return " (0: " + what + ")"
}

// limits returns the limits the flags give, or an error naming the flag
// that is wrong (a usage error).
func (l *limitFlags) limits() (runtime.Limits, error) {
	for _, f := range []struct {
		name, zero string
		negative   bool
	}{{"max-duration", "no limit", l.duration < 0}, {"max-recursion", "the default", l.recursion < 0}, {"max-int-bits", "no limit", l.intBits < 0},
		{"max-host-calls", "no limit", l.hostCalls < 0}} {
		if f.negative {
			return runtime.Limits{}, fmt.Errorf("--%s must not be negative (0: %s)", f.name, f.zero)
		}
	}
	lim := runtime.Limits{MaxDuration: l.duration, MaxRecursion: l.recursion, MaxIntBits: l.intBits, MaxHostCalls: l.hostCalls}
	var err error
	if lim.MaxMemory, err = parseSize("max-memory", l.memory, maxMemory); err != nil {
		return runtime.Limits{}, err
	}
	most := int64(min(maxMemory, math.MaxInt)) // MaxOutput is an int
	if l.profile.service {
		most = maxAnswer
	}
	var output int64
	for _, a := range []struct {
		name, val string
		dst       *int64
	}{{"max-output", l.output, &output}, {"max-result", l.result, &lim.MaxResult}} {
		if *a.dst, err = parseSize(a.name, a.val, most); err != nil {
			return runtime.Limits{}, err
		}
		if *a.dst == 0 && l.profile.service {
			return runtime.Limits{}, fmt.Errorf("--%s: give a size from 1 byte to %s, like 16MiB: a service's answers are always bounded", a.name, formatSize(maxAnswer))
		}
	}
	lim.MaxOutput = int(output)
	if lim.MaxMemory > 0 && (lim.MaxResult == 0 || lim.MaxResult > lim.MaxMemory) {
		// A value cannot take more than the heap may.
		lim.MaxResult = lim.MaxMemory
	}
	// A flag's 0 is no limit; the runtime's 0 is the default.
	unlimited(&lim.MaxDuration)
	unlimited(&lim.MaxMemory)
	unlimited(&lim.MaxOutput)
	unlimited(&lim.MaxResult)
	unlimited(&lim.MaxIntBits)
	unlimited(&lim.MaxHostCalls)
	return lim, nil
}

// unlimited makes a zero limit runtime.Unlimited.
func unlimited[T int | int64 | time.Duration](v *T) {
	if *v == 0 {
		*v = runtime.Unlimited
	}
}

// parseSize reads a size flag's value: 0 or empty is 0, otherwise a
// positive size up to most (see parseBytes).
func parseSize(name, s string, most int64) (int64, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	n, err := parseBytes(s)
	if err == nil && n > most {
		err = fmt.Errorf("%q is more than the largest, %s", s, formatSize(most))
	}
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", name, err)
	}
	return n, nil
}

// formatSize spells n bytes as parseBytes reads them: "1MiB", "1536KiB",
// "1000", or "" for 0 (no limit).
func formatSize(n int64) string {
	if n == 0 {
		return ""
	}
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
