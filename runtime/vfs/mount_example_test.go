package vfs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
)

// Mount a host directory read-only at /data and a copy-on-write overlay of
// another at /scratch: the code writes to /scratch, the host does not
// change.
func ExampleOpenMounts() {
	ctx := context.Background()
	input, _ := os.MkdirTemp("", "input-")
	defer os.RemoveAll(input)
	_ = os.WriteFile(filepath.Join(input, "names.txt"), []byte("ada\ngrace\n"), 0o644)
	scratch, _ := os.MkdirTemp("", "scratch-")
	defer os.RemoveAll(scratch)

	ro, _ := vfs.ParseMount(input + ":/data")
	ov, _ := vfs.ParseMount(scratch + ":/scratch:overlay")
	mounts, err := vfs.OpenMounts(ro, ov)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mounts.Close()

	engine, _ := runtime.Default(ctx)
	it, _ := engine.NewInterpreter(ctx)
	defer it.Close(ctx)
	prog, _ := it.Compile(ctx, `
from pathlib import Path
names = Path('/data/names.txt').read_text().split()
Path('/scratch/upper.txt').write_text('\n'.join(n.upper() for n in names))
Path('/scratch/upper.txt').read_text()
`)
	host := &runtime.Host{OS: mounts}
	v, err := host.Run(ctx, prog)
	fmt.Printf("%q %v\n", v, err)
	entries, _ := os.ReadDir(scratch)
	fmt.Println("files on the host:", len(entries))
	// Output:
	// "ADA\nGRACE" <nil>
	// files on the host: 0
}
