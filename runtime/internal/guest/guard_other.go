//go:build !((linux || darwin) && (amd64 || arm64))

package guest

import "errors"

// errNoGuard: here the translated modules check every access's bounds
// instead (docs/building.md#guard-pages).
var errNoGuard = errors.New("no guard pages on this platform")

// ReserveGuarded fails: there are no guard pages here.
func ReserveGuarded() ([]byte, error) { return nil, errNoGuard }

// Grant fails: there are no guard pages here.
func Grant([]byte) error { return errNoGuard }
