//go:build !((linux || darwin) && (amd64 || arm64))

package guest

import "errors"

// CanGuard reports whether linear memory can have guard pages here: not
// on this platform, where the translated modules check every access's
// bounds (docs/building.md#guard-pages).
const CanGuard = false

var errNoGuard = errors.New("no guard pages on this platform")

// ReserveGuarded fails: there are no guard pages here.
func ReserveGuarded() ([]byte, error) { return nil, errNoGuard }

// Grant fails: there are no guard pages here.
func Grant([]byte) error { return errNoGuard }
