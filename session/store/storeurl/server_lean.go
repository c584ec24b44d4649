//go:build monty_lean

package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/monty-go/monty/session/store"
)

// openServer refuses a redis://, rediss:// or s3:// spec: this build
// (the monty_lean tag) has no client for them.
func openServer(_ context.Context, spec string, u *url.URL, _ url.Values, _ time.Duration) (store.Store, error) {
	return nil, fmt.Errorf("%w: %s (%s:// needs a build without the monty_lean tag, such as a release archive or the image;"+
		" this one keeps sessions in a directory or mem:)", ErrNotInThisBuild, redact(spec), u.Scheme)
}
