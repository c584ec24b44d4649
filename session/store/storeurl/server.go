//go:build !monty_lean

package storeurl

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/redisstore"
	"github.com/monty-go/monty/session/store/s3store"
)

// openServer opens the store of a redis://, rediss:// or s3:// spec, u
// without its query q.
func openServer(ctx context.Context, spec string, u *url.URL, q url.Values, ttl time.Duration) (store.Store, error) {
	if u.Scheme == "s3" {
		return openS3(ctx, spec, u, q, ttl)
	}
	prefix := take(q, "prefix")
	// go-redis reads its own pool settings from the query.
	u.RawQuery = q.Encode()
	return redisstore.New(ctx, redisstore.Options{URL: u.String(), Prefix: prefix, TTL: ttl})
}

func openS3(ctx context.Context, spec string, u *url.URL, q url.Values, ttl time.Duration) (store.Store, error) {
	bucket := strings.Trim(u.Path, "/")
	if u.Host == "" || bucket == "" || strings.Contains(bucket, "/") {
		return nil, badSpec(spec, "want s3://KEY:SECRET@host:port/bucket")
	}
	opts := s3store.Options{
		Endpoint:  u.Host,
		Bucket:    bucket,
		Prefix:    take(q, "prefix"),
		Region:    take(q, "region"),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		TTL:       ttl,
	}
	if u.User != nil {
		opts.AccessKey = u.User.Username()
		opts.SecretKey, _ = u.User.Password()
	}
	if ssl := take(q, "ssl"); ssl != "" {
		b, err := strconv.ParseBool(ssl)
		if err != nil {
			return nil, badSpec(spec, "ssl: want true or false")
		}
		opts.UseSSL = b
	}
	if err := leftover(q); err != nil {
		return nil, badSpec(spec, err.Error())
	}
	if opts.AccessKey == "" || opts.SecretKey == "" {
		return nil, badSpec(spec, "no credentials: put KEY:SECRET in the URL or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	return s3store.New(ctx, opts)
}
