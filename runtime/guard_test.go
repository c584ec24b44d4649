//go:build (linux || darwin) && (amd64 || arm64) && !monty_boundscheck

package runtime

// strayGuarded is whether runtime/internal/stray, translated with the
// interpreter's edits (scripts/aot.sh), has guard pages on this platform:
// it must, unless built with the tag monty_boundscheck.
const strayGuarded = true
