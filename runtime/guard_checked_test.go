//go:build !((linux || darwin) && (amd64 || arm64) && !monty_boundscheck)

package runtime

// strayGuarded is whether runtime/internal/stray has guard pages on this
// platform: it checks every access's bounds instead.
const strayGuarded = false
