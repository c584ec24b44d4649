//go:build !perfmap

package main

const perfmapOn = false
