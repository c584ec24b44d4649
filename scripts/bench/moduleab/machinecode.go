package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero"
)

// compileEnv names the child mode that compiles the module at its path with
// wazero's optimizing compiler, no cache, and exits: in a perfmap build
// wazero then lists the machine code of every function in
// /tmp/perf-PID.map.
const compileEnv = "MODULEAB_COMPILE"

func compileChild(path string) int {
	b, err := os.ReadFile(path)
	if err == nil {
		ctx := context.Background()
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
		_, err = r.CompileModule(ctx, b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "moduleab compile child:", err)
		return 1
	}
	return 0
}

// removePerfMap removes the perf map wazero writes for this process in a
// perfmap build: every compilation adds megabytes to it.
func removePerfMap() {
	if perfmapOn {
		_ = os.Remove(fmt.Sprintf("/tmp/perf-%d.map", os.Getpid()))
	}
}

// machineCode compiles the module at path in a child process and sets the
// machine code size of each of fns from the child's perf map.
func machineCode(self, path string, fns []wasmFunc) error {
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), compileEnv+"="+path)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("compiling for the perf map: %w", err)
	}
	name := fmt.Sprintf("/tmp/perf-%d.map", cmd.Process.Pid)
	defer os.Remove(name)
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	// Lines: "ADDR SIZE [N/LAST]NAME:::::LABEL", one per block of machine
	// code of defined function N (sizes in hex); trampolines and entry
	// preambles have other names.
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 3)
		if len(fields) != 3 || !strings.HasPrefix(fields[2], "[") {
			continue
		}
		n, _, ok := strings.Cut(fields[2][1:], "/")
		fn, err1 := strconv.Atoi(n)
		size, err2 := strconv.ParseUint(fields[1], 16, 64)
		if !ok || err1 != nil || err2 != nil || fn < 0 || fn >= len(fns) {
			return fmt.Errorf("%s: unexpected line %q", name, sc.Text())
		}
		fns[fn].machine += int(size)
	}
	return sc.Err()
}
