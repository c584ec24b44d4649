// Package storeurl opens a session store named by a short string, as the
// command line's --store flag and services' configuration give it:
//
//	/var/lib/monty/sessions          a directory (dirstore); also file:///path
//	mem:                             in-process memory (memstore), lost on exit
//	redis://[user:pass@]host:port/db Redis (redisstore); rediss:// for TLS
//	s3://KEY:SECRET@host:port/bucket an S3-compatible server (s3store)
//	HOT,COLD                         two of the above: a tiered store with
//	                                 HOT read first and COLD as the archive
//	                                 (so a single directory's name cannot
//	                                 contain a comma)
//
// A spec that starts like a URL, with a scheme (a letter, then letters,
// digits, '+', '-' or '.') and a colon, is never taken for a directory:
// one that is none of the forms above, such as dir:/x, file:x, redis:host
// or postgres://…, is refused with an error matching ErrUnknownScheme. A
// relative directory whose name has a colon is written with a leading
// ./ (./backup:1). On Windows a drive letter (C:\dir, C:/dir) starts a
// path; elsewhere c:/dir is refused like any other unknown scheme.
//
// Query parameters, removed before the URL reaches the client library:
//
//	ttl=2h           every backend: how long a blob lives after its last Put
//	                 (a Go duration; "0" or "never" keeps blobs forever)
//	prefix=P         redis and s3: key prefix, so several stores share a server
//	region=R, ssl=1  s3 only
//	archive_after=30m, interval=1m   on the HOT URL of a tiered pair
//
// For s3:// without credentials in the URL, AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY are used.
//
// A program built with the monty_lean tag links no Redis or S3 client:
// there, redis://, rediss:// and s3:// specs fail with ErrNotInThisBuild.
//
// OpenWith takes the same settings as Options instead, for a service's
// flags (monty serve's --state-ttl, --state-archive-after, ...): they
// apply to whatever store the spec names, a plain directory included.
package storeurl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/tiered"
)

// ErrBadSpec is wrapped by every error about the spec itself (as opposed to
// a backend that cannot be reached).
var ErrBadSpec = errors.New("storeurl: invalid store spec")

// ErrNotInThisBuild is wrapped by the error for a redis:// or s3:// spec
// in a program built with the monty_lean tag, which leaves those stores'
// clients out (as the monty-go wheel's monty is built): such a program
// keeps sessions in directories and memory only.
var ErrNotInThisBuild = errors.New("storeurl: this kind of store is not in this build")

// ErrUnknownScheme is wrapped by the error for a spec that starts with a
// URL scheme but is none of the accepted forms (see the package
// documentation): it is never opened as a directory. It matches
// ErrBadSpec too.
var ErrUnknownScheme = fmt.Errorf("%w: unknown scheme", ErrBadSpec)

// forms lists the accepted specs, for errors.
const forms = "a store is a directory (/path, ./relative, or ./name:x for a relative name with a colon), file:///path, mem:, " +
	"redis://host:port/db (rediss:// for TLS), s3://KEY:SECRET@host:port/bucket, or two of these as HOT,COLD"

// Options are settings for every store OpenWith opens. A zero duration
// leaves the backend's default (no expiry for directories and memory, 2
// hours in Redis, 7 days in S3; the tiered store's archive after 30 minutes
// without a write, checked every minute); a negative one means never
// (expiry) or is refused (archiving). A setting given here may not also be
// given as a parameter of the spec.
type Options struct {
	// TTL is how long a blob lives after its last Put: in the store, or in
	// the HOT store of a tiered pair (spec parameter ttl=).
	TTL time.Duration
	// ArchiveTTL is how long a blob lives in the COLD store of a tiered
	// pair after it was archived (ttl= on the COLD url). Tiered pairs only.
	ArchiveTTL time.Duration
	// ArchiveAfter is how long a blob goes without a write before the
	// tiered store's archiver copies it into the COLD store (archive_after=
	// on the HOT url). Tiered pairs only.
	ArchiveAfter time.Duration
	// ArchiveInterval is the time between archiver passes (interval= on the
	// HOT url). Tiered pairs only.
	ArchiveInterval time.Duration
	// Logf, when set, receives the tiered archiver's errors.
	Logf func(format string, args ...any)
}

// Open opens the store that spec names (see the package documentation).
// Backends that need a server are contacted once, so a wrong address fails
// here rather than at the first session. The caller closes the store.
func Open(ctx context.Context, spec string) (store.Store, error) {
	return OpenWith(ctx, spec, Options{})
}

// OpenWith is Open with settings that apply whatever the spec names (see
// Options). Errors about the spec or the settings wrap ErrBadSpec.
func OpenWith(ctx context.Context, spec string, opts Options) (store.Store, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, badSpec(spec, "empty; "+forms)
	}
	if hot, cold, ok := strings.Cut(spec, ","); ok {
		if strings.TrimSpace(hot) == "" || strings.TrimSpace(cold) == "" || strings.Contains(cold, ",") {
			return nil, badSpec(spec, "a tiered store is HOT,COLD: two stores, comma-separated (a directory name may not contain a comma)")
		}
		// Both halves are checked before either is opened, so that a
		// wrong COLD spec leaves no HOT directory behind.
		for _, s := range []string{hot, cold} {
			if _, err := schemeOf(s); err != nil {
				return nil, err
			}
		}
		return openTiered(ctx, spec, hot, cold, opts)
	}
	if opts.ArchiveTTL != 0 || opts.ArchiveAfter != 0 || opts.ArchiveInterval != 0 {
		return nil, badSpec(spec, "the archive TTL, archive-after and archive interval settings need a tiered store: give HOT,COLD")
	}
	st, tierOpts, err := openOne(ctx, spec, opts.TTL)
	if err == nil && len(tierOpts) > 0 {
		st.Close()
		err = badSpec(spec, "archive_after and interval belong on the HOT url of a HOT,COLD pair")
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// schemeOf returns the lower-cased scheme of a spec that names a backend
// by URL, or "" for a directory. A spec that starts with a scheme but is
// none of the accepted URL forms is refused (ErrUnknownScheme), whatever
// the rest of it: it is a mistake, not a directory's name.
func schemeOf(spec string) (string, error) {
	spec = strings.TrimSpace(spec)
	if filepath.VolumeName(spec) != "" {
		return "", nil // C:\dir on Windows
	}
	name, rest, ok := strings.Cut(spec, ":")
	if !ok || !isScheme(name) {
		return "", nil
	}
	scheme := strings.ToLower(name)
	switch scheme {
	case "mem", "memory":
		if rest == "" || strings.HasPrefix(rest, "?") {
			return scheme, nil
		}
		return "", badSpec(spec, scheme+": takes parameters only (mem: or mem:?ttl=2h); "+forms)
	case "file", "redis", "rediss", "s3":
		if strings.HasPrefix(rest, "//") {
			return scheme, nil
		}
		return "", unknownScheme(spec, fmt.Sprintf("%q without // is not a store scheme (%s://…)", name+":", scheme))
	}
	return "", unknownScheme(spec, fmt.Sprintf("%q is not a store scheme", name+":"))
}

// isScheme reports whether s has the syntax of a URL scheme (RFC 3986): a
// letter, then letters, digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// unknownScheme is the error for spec, which starts with a scheme but is
// none of the forms, because of why.
func unknownScheme(spec, why string) error {
	return fmt.Errorf("%w in %q: %s; %s", ErrUnknownScheme, redact(spec), why, forms)
}

// openOne opens a single backend and returns the tiered-store parameters
// (archive_after, interval) found in its query. ttl is the time to live
// when the spec has no ttl= of its own (0: the backend's default).
func openOne(ctx context.Context, spec string, ttl time.Duration) (store.Store, url.Values, error) {
	spec = strings.TrimSpace(spec)
	scheme, err := schemeOf(spec)
	if err != nil {
		return nil, nil, err
	}
	if scheme == "" {
		st, err := dirstore.Open(spec, dirstore.Options{TTL: max(ttl, 0)})
		return st, nil, err
	}
	u, err := url.Parse(spec)
	if err != nil {
		return nil, nil, badSpec(spec, err.Error())
	}
	q := u.Query()
	u.RawQuery = ""
	tierOpts := url.Values{}
	for _, k := range []string{"archive_after", "interval"} {
		if q.Has(k) {
			tierOpts[k] = q[k]
			q.Del(k)
		}
	}
	urlTTL, err := takeDuration(q, "ttl")
	switch {
	case err != nil:
		return nil, nil, badSpec(spec, err.Error())
	case urlTTL != 0 && ttl != 0:
		return nil, nil, badSpec(spec, "the TTL is given twice: as ttl= in the url and as a setting; keep one")
	case urlTTL != 0:
		ttl = urlTTL
	}
	var st store.Store
	switch u.Scheme {
	case "mem", "memory":
		if err = leftover(q); err != nil {
			return nil, nil, badSpec(spec, err.Error())
		}
		st = memstore.New(memstore.Options{TTL: max(ttl, 0)})
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, nil, badSpec(spec, "file URLs name a local directory: file:///path")
		}
		if err = leftover(q); err != nil {
			return nil, nil, badSpec(spec, err.Error())
		}
		st, err = dirstore.Open(u.Path, dirstore.Options{TTL: max(ttl, 0)})
	case "redis", "rediss", "s3":
		st, err = openServer(ctx, spec, u, q, ttl)
	default:
		err = badSpec(spec, "unknown scheme "+u.Scheme)
	}
	if err != nil {
		return nil, nil, err
	}
	return st, tierOpts, nil
}

func openTiered(ctx context.Context, spec, hotSpec, coldSpec string, o Options) (store.Store, error) {
	if o.ArchiveAfter < 0 || o.ArchiveInterval < 0 {
		return nil, badSpec(spec, "the archive-after time and the archive interval must be positive durations")
	}
	hot, q, err := openOne(ctx, hotSpec, o.TTL)
	if err != nil {
		return nil, err
	}
	opts := tiered.Options{Hot: hot, Logf: o.Logf}
	if opts.ArchiveAfter, err = takeDuration(q, "archive_after"); err == nil {
		opts.Interval, err = takeDuration(q, "interval")
	}
	if err == nil {
		err = leftover(q)
	}
	if err == nil && (opts.ArchiveAfter != 0 && o.ArchiveAfter != 0 || opts.Interval != 0 && o.ArchiveInterval != 0) {
		err = errors.New("archive_after or interval is given twice: in the HOT url and as a setting; keep one")
	}
	if err != nil {
		hot.Close()
		return nil, badSpec(spec, err.Error())
	}
	opts.ArchiveAfter = cmp.Or(opts.ArchiveAfter, o.ArchiveAfter)
	opts.Interval = cmp.Or(opts.Interval, o.ArchiveInterval)
	cold, rest, err := openOne(ctx, coldSpec, o.ArchiveTTL)
	if err == nil && len(rest) > 0 {
		cold.Close()
		err = badSpec(spec, "archive_after and interval belong on the HOT url")
	}
	if err != nil {
		hot.Close()
		return nil, err
	}
	opts.Cold = cold
	t, err := tiered.New(opts)
	if err != nil {
		hot.Close()
		cold.Close()
		return nil, err
	}
	t.Start()
	return t, nil
}

func take(q url.Values, key string) string {
	v := q.Get(key)
	q.Del(key)
	return v
}

// takeDuration reads a duration parameter: 0 when absent, negative (keep
// forever) for "0" or "never".
func takeDuration(q url.Values, key string) (time.Duration, error) {
	v := take(q, key)
	switch v {
	case "":
		return 0, nil
	case "0", "never":
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 30m, or never", key, v)
	}
	return d, nil
}

func leftover(q url.Values) error {
	for k := range q {
		return fmt.Errorf("unknown parameter %q", k)
	}
	return nil
}

func badSpec(spec, why string) error {
	return fmt.Errorf("%w %q: %s", ErrBadSpec, redact(spec), why)
}

// redact hides passwords in URLs so that errors can be logged.
func redact(spec string) string {
	parts := strings.Split(spec, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
