//go:build linux

package pages

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/wasm"
)

// residentKB returns the resident kilobytes of the mapping that holds addr
// (/proc/self/smaps).
func residentKB(t *testing.T, addr uintptr) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	inside := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && strings.Count(fields[0], "-") == 1 && !strings.HasSuffix(fields[0], ":") {
			lo, hi, _ := strings.Cut(fields[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			inside = err1 == nil && err2 == nil && uint64(addr) >= start && uint64(addr) < end
			continue
		}
		if inside && len(fields) >= 2 && fields[0] == "Rss:" {
			kb, err := strconv.Atoi(fields[1])
			require.NoError(t, err)
			return kb
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}

// TestRelease: releasing the embedded module's pages makes them no longer
// resident, and reading the module afterwards gives back exactly its bytes
// (the pages come back from the executable).
func TestRelease(t *testing.T) {
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(wasm.Module)))
	sum := sha256.Sum256(wasm.Module) // makes every page resident
	require.Equal(t, wasm.SHA256, hex.EncodeToString(sum[:]))
	before := residentKB(t, addr)

	Release(wasm.Module)
	after := residentKB(t, addr)
	require.LessOrEqual(t, after, before-len(wasm.Module)/1024*9/10,
		"the module's pages stayed resident (%d kB before, %d kB after)", before, after)

	sum = sha256.Sum256(wasm.Module)
	require.Equal(t, wasm.SHA256, hex.EncodeToString(sum[:]), "the module came back changed")
}
