//go:build perfmap

package main

// perfmapOn: built with -tags perfmap, wazero writes the machine code it
// makes of every function to /tmp/perf-PID.map, which machineCode reads.
const perfmapOn = true
