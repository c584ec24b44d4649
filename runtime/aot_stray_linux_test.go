package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/internal/guest"
	"github.com/monty-go/monty/runtime/internal/stray"
)

// TestStrayReservation: the guard pages are address space, not memory:
// each instance adds GuardedSize (8 GiB) to VmSize, and to RSS only the
// pages it touched; closing it gives the address space back.
func TestStrayReservation(t *testing.T) {
	if !strayGuarded {
		t.Skip("no guard pages in this build")
	}
	before := procStatus(t)
	const n = 4
	var as []*aotInstance
	for range n {
		a := newStray(t, 1024)
		_, err := strayCall(a, strayGrow, 0, 15) // 1 MiB
		require.NoError(t, err)
		for off := uint32(0); off < 1<<20; off += 4096 {
			_, err = strayCall(a, strayStore8, off, 1)
			require.NoError(t, err)
		}
		as = append(as, a)
	}
	during := procStatus(t)
	vm := during["VmSize"] - before["VmSize"]
	rss := during["VmRSS"] - before["VmRSS"]
	t.Logf("%d instances with 1 MiB touched each: VmSize +%d MiB, VmRSS +%d MiB", n, vm>>20, rss>>20)
	assert.GreaterOrEqual(t, vm, int64(n)*guest.GuardedSize, "each instance reserves its guard pages")
	assert.Less(t, rss, int64(n)*8<<20, "RSS grows by what is touched, not by what is reserved")
	for _, a := range as {
		require.NoError(t, a.close(context.Background()))
	}
	after := procStatus(t)
	assert.Less(t, after["VmSize"]-before["VmSize"], int64(guest.GuardedSize), "closing an instance unmaps its reservation")
}

// procStatus reads the sizes (in bytes) of /proc/self/status.
func procStatus(t *testing.T) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	sizes := map[string]int64{}
	for line := range strings.Lines(string(b)) {
		key, rest, ok := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			sizes[key] = kb << 10
		}
	}
	return sizes
}

// TestStrayReservationRefused: where the system refuses the reservation
// (here an address-space limit, ulimit -v), a new instance fails with what
// to do, instead of running without bounds.
func TestStrayReservationRefused(t *testing.T) {
	if !strayGuarded {
		t.Skip("no guard pages in this build")
	}
	m := &aotModule{
		newInstance: func(imports AOTImports) AOTInstance { return stray.New(imports) },
		maxBytes:    1 << 16,
	}
	if os.Getenv("MONTY_TEST_ADDRESS_LIMIT") == "1" {
		vm := procStatus(t)["VmSize"]
		require.NotZero(t, vm)
		limit := uint64(vm) + 1<<30 // room for the Go heap, not for 8 GiB
		var was syscall.Rlimit
		require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_AS, &was))
		if was.Max < limit {
			fmt.Println("skip: the hard address-space limit is lower already")
			return
		}
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}))
		_, err := m.instantiate(context.Background(), &Interpreter{})
		require.Error(t, err)
		fmt.Println(err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStrayReservationRefused$")
	cmd.Env = append(os.Environ(), "MONTY_TEST_ADDRESS_LIMIT=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	if strings.Contains(string(out), "skip: ") {
		t.Skip("the hard address-space limit is too low to lower it to VmSize + 1 GiB")
	}
	assert.Contains(t, string(out), "monty: instantiate interpreter: reserve 8 GiB of address space for linear memory with guard pages")
	assert.Contains(t, string(out), "ulimit -v")

	// A cap past wasm32's 4 GiB has no guard pages to offer either.
	m.maxBytes = 1 << 33
	_, err = m.instantiate(context.Background(), &Interpreter{})
	require.ErrorContains(t, err, "no guarded linear memory")
}
