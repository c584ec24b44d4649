// Package s3store is a store.Store in an S3-compatible object store: the
// cold archive of the tiered store, or a store of its own.
//
// # Objects
//
// A blob is one object whose body is the data and whose user metadata holds,
// in the single value x-amz-meta-monty-info, its version, creation,
// modification and expiry times (Unix nanoseconds), SHA-256 and MD5. Body
// and metadata are written by one PUT and read by one GET.
//
// Reads check that they are consistent before anything relies on them: a
// GET's body must match the SHA-256 in its metadata, and a HEAD's ETag the
// MD5. Some gateways serve a read while a write replaces the object and
// can answer with the old body or metadata and the new ETag (versitygw does:
// it reads the ETag and the metadata from the file system separately). Such
// a torn read is retried; acting on it could let a compare-and-set succeed
// against a version that is no longer stored. One metadata value rather
// than several keeps the fields of one read together. Where the ETag is not
// the MD5 of the body (AWS with SSE-KMS), a HEAD is accepted when two reads
// in a row agree.
//
// Object keys are Prefix + the id with each '/'-separated segment kept as
// is, except that the last segment gets a '=' appended and an empty segment
// other than the last is written '~' ('=' and '~' never occur in ids). So
// "users/42/s1" is stored as "users/42/s1=". This keeps keys readable while
// making them safe for gateways that map keys to files (versitygw, MinIO):
// no key is a prefix directory of another ("a=" vs "a/b="), and there are no
// empty path segments ("a//b" becomes "a/~/b=").
//
// # Expiry
//
// S3 has no per-object time to live without bucket lifecycle rules, so the
// expiry time is kept in the metadata and expired objects are treated as
// absent; Get, Stat and List delete the expired objects they meet. In
// production also configure a lifecycle rule on the bucket (expire objects
// under Prefix some days after TTL) so that objects nobody reads again are
// removed too; the rule only ever removes objects this store already treats
// as absent.
//
// # Compare-and-set
//
// Put first reads the object's metadata (HEAD), checks the condition
// against it, then writes with a conditional request: If-None-Match: * when
// no object exists, If-Match: <ETag of the object it checked> otherwise. The
// server refuses the write (412) if anything replaced the object meanwhile,
// so CAS holds across processes without any lock. A conditional write the
// client library sent again after losing the answer to the first (which
// landed) meets its own object: Put tells it by the version it wrote, and
// succeeds. This needs a server that
// honours conditional PUTs: AWS S3 (since 2024), MinIO, versitygw (used by
// the tests), Ceph RGW and others. On a server that ignores the headers
// conditional Puts are not safe; New cannot detect that. Since an ETag is
// derived from the content, a conditional Put also succeeds when the object
// was meanwhile rewritten with byte-identical data (harmless for
// read-modify-write: the caller's input is exactly what is stored).
//
// The lazy removal of an expired object re-reads its ETag just before the
// DELETE; S3 has no conditional DELETE, so an object re-created by another
// client in that millisecond could be removed. Get and Stat remove expired
// objects before they return ErrNotFound, so a caller that re-creates a
// session after a miss is never affected by its own removal.
//
// It uses github.com/minio/minio-go/v7: a maintained, compact S3 client
// (a tenth of the dependencies of the AWS SDK) that speaks to any
// S3-compatible server and supports conditional writes.
package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/internal/storeutil"
)

// Source is the Info.Source of blobs served by this store.
const Source = "s3"

// DefaultTTL is the time to live of a blob after its last Put when
// Options.TTL is zero.
const DefaultTTL = 7 * 24 * time.Hour

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "sessions/"

// Options configures a Store.
type Options struct {
	// Endpoint is the server's host:port (no scheme), e.g.
	// "s3.eu-west-1.amazonaws.com" or "127.0.0.1:9000".
	Endpoint string
	// Bucket holds the objects; New creates it when missing.
	Bucket string
	// Prefix is prepended to every object key; DefaultPrefix when empty.
	Prefix string
	// AccessKey is the access key id of the credentials (static,
	// signature v4).
	AccessKey string
	// SecretKey is the secret access key of the credentials.
	SecretKey string
	// Region of the bucket; "us-east-1" when empty.
	Region string
	// UseSSL selects https.
	UseSSL bool
	// TTL is how long a blob lives after its last Put: DefaultTTL when
	// zero, forever when negative.
	TTL time.Duration
}

// Store keeps blobs as objects in a bucket. It is safe for concurrent use by
// multiple goroutines and, on a server that honours conditional writes, by
// any number of processes sharing the bucket.
type Store struct {
	core   minio.Core
	tr     *http.Transport
	bucket string
	prefix string
	ttl    time.Duration
	where  string // endpoint/bucket, for error messages
}

var _ store.Store = (*Store)(nil)

// New connects to the server and creates the bucket if it does not exist.
func New(ctx context.Context, opts Options) (*Store, error) {
	if opts.Endpoint == "" || opts.Bucket == "" {
		return nil, fmt.Errorf("%w: s3store: Endpoint and Bucket are required", store.ErrUnavailable)
	}
	region := opts.Region
	if region == "" {
		region = "us-east-1"
	}
	tr, err := minio.DefaultTransport(opts.UseSSL)
	if err != nil {
		return nil, fmt.Errorf("%w: s3store: %v", store.ErrUnavailable, err)
	}
	client, err := minio.New(opts.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, ""),
		Secure:    opts.UseSSL,
		Region:    region,
		Transport: tr,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: s3store: %v (Endpoint is host:port, without a scheme)", store.ErrUnavailable, err)
	}
	s := &Store{
		core:   minio.Core{Client: client},
		tr:     tr,
		bucket: opts.Bucket,
		prefix: opts.Prefix,
		ttl:    opts.TTL,
		where:  opts.Endpoint + "/" + opts.Bucket,
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	exists, err := client.BucketExists(ctx, opts.Bucket)
	if err != nil {
		return nil, s.unavailable("check bucket", "", err)
	}
	if !exists {
		err := client.MakeBucket(ctx, opts.Bucket, minio.MakeBucketOptions{Region: region})
		if code := minio.ToErrorResponse(err).Code; err != nil && code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
			return nil, s.unavailable("create bucket", "", err)
		}
	}
	return s, nil
}

// Client returns the underlying client (for tests and diagnostics).
func (s *Store) Client() *minio.Client { return s.core.Client }

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the key prefix in use.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) unavailable(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("s3store: %s %s: %w", op, key, err)
	}
	return fmt.Errorf("%w: s3store: %s %s on %s: %v (check that the server is reachable and the credentials and bucket are right)",
		store.ErrUnavailable, op, key, s.where, err)
}

// Key returns the object key of id (see the package documentation).
func (s *Store) Key(id string) string {
	segs := strings.Split(id, "/")
	for i, seg := range segs[:len(segs)-1] {
		if seg == "" {
			segs[i] = "~"
		}
	}
	return s.prefix + strings.Join(segs, "/") + "="
}

// idOf inverts Key; ok is false for keys that Key does not produce.
func (s *Store) idOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix)
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, "=")
	if !ok {
		return "", false
	}
	segs := strings.Split(rest, "/")
	for i, seg := range segs[:len(segs)-1] {
		if seg == "~" {
			segs[i] = ""
		}
	}
	id := strings.Join(segs, "/")
	if store.CheckID(id) != nil || s.Key(id) != key {
		return "", false
	}
	return id, true
}

// metaInfo is the metadata header (canonical x-amz-meta-* form) that holds
// a blob's info; metaInfoKey is the name it is written under.
const (
	metaInfo    = "X-Amz-Meta-Monty-Info"
	metaInfoKey = "Monty-Info"
	infoFormat  = "v1"
)

// encodeInfo is the metadata value of a blob: fields separated by ';'.
func encodeInfo(inf store.Info, md5hex string) string {
	return strings.Join([]string{infoFormat, inf.Version,
		strconv.FormatInt(inf.Created.UnixNano(), 10),
		strconv.FormatInt(inf.Modified.UnixNano(), 10),
		strconv.FormatInt(storeutil.UnixNano(inf.Expires), 10),
		inf.SHA256, md5hex}, ";")
}

// info returns the Info described by an object's metadata and the MD5 of
// its body recorded there. An object without this store's metadata, or
// with a value it cannot parse, yields a store.ErrUnreadable error.
func (s *Store) info(id string, oi minio.ObjectInfo) (inf store.Info, md5hex string, err error) {
	raw := oi.Metadata.Get(metaInfo)
	if raw == "" {
		return store.Info{}, "", storeutil.Unreadable("s3store: object %s on %s has no monty metadata (not written by this store: delete it, or use another Prefix)",
			s.Key(id), s.where)
	}
	f := strings.Split(raw, ";")
	var times [3]int64
	ok := len(f) == 7 && f[0] == infoFormat && f[1] != "" && storeutil.IsHex(f[5], 64) && storeutil.IsHex(f[6], 32)
	for i := 0; ok && i < 3; i++ {
		n, err := strconv.ParseInt(f[2+i], 10, 64)
		ok = err == nil && (n > 0 || i == 2 && n == 0)
		times[i] = n
	}
	if !ok {
		return store.Info{}, "", storeutil.Unreadable("s3store: object %s on %s has garbled monty metadata %q (delete it)",
			s.Key(id), s.where, raw)
	}
	return store.Info{
		ID:       id,
		Size:     oi.Size,
		Version:  f[1],
		Created:  storeutil.FromUnixNano(times[0]),
		Modified: storeutil.FromUnixNano(times[1]),
		Expires:  storeutil.FromUnixNano(times[2]),
		SHA256:   f[5],
		Source:   Source,
	}, f[6], nil
}

// etagIs reports whether an ETag is the given MD5 (hex).
func etagIs(etag, md5hex string) bool {
	return strings.EqualFold(strings.Trim(etag, `"`), md5hex)
}

// readAttempts bounds the re-reads of an object whose read was torn.
const readAttempts = 8

func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey"
}

func isPreconditionFailed(err error) bool {
	r := minio.ToErrorResponse(err)
	// 409 ConditionalRequestConflict: AWS's answer to a concurrent
	// conditional write on the same key.
	return r.StatusCode == http.StatusPreconditionFailed || r.StatusCode == http.StatusConflict ||
		r.Code == "PreconditionFailed" || r.Code == "ConditionalRequestConflict"
}

// head returns the object's info and ETag; exists is false when there is no
// object. An expired object is returned as it is (callers decide).
func (s *Store) head(ctx context.Context, id string) (inf store.Info, etag string, exists bool, err error) {
	key := s.Key(id)
	var prev minio.ObjectInfo
	for attempt := 0; ; attempt++ {
		oi, err := s.core.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
		if isNotFound(err) {
			return store.Info{}, "", false, nil
		}
		if err != nil {
			return store.Info{}, "", false, s.unavailable("stat", key, err)
		}
		inf, md5hex, err := s.info(id, oi)
		if err != nil {
			return store.Info{}, "", false, err
		}
		stable := attempt > 0 && oi.ETag == prev.ETag && oi.Metadata.Get(metaInfo) == prev.Metadata.Get(metaInfo)
		if etagIs(oi.ETag, md5hex) || stable {
			return inf, oi.ETag, true, nil
		}
		if attempt == readAttempts {
			return store.Info{}, "", false, fmt.Errorf("%w: s3store: object %s on %s keeps changing while read; retry", store.ErrUnavailable, key, s.where)
		}
		prev = oi
		if err := pause(ctx, attempt); err != nil {
			return store.Info{}, "", false, err
		}
	}
}

// pause waits a little longer on each attempt of a torn read.
func pause(ctx context.Context, attempt int) error {
	t := time.NewTimer(time.Duration(attempt+1) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get returns the blob under id, or store.ErrNotFound. Data and metadata come
// from one GET.
func (s *Store) Get(ctx context.Context, id string) (store.Object, error) {
	if err := store.CheckID(id); err != nil {
		return store.Object{}, err
	}
	key := s.Key(id)
	for attempt := 0; ; attempt++ {
		obj, torn, err := s.get(ctx, id, key)
		if !torn {
			return obj, err
		}
		if attempt == readAttempts {
			return store.Object{}, storeutil.Unreadable("s3store: object %s on %s does not match its checksum (read again; if it persists the object is damaged: delete it)",
				key, s.where)
		}
		if err := pause(ctx, attempt); err != nil {
			return store.Object{}, err
		}
	}
}

// get is one GET of Get; torn is true when the body does not match the
// metadata (a write raced with the read, or the object is damaged).
func (s *Store) get(ctx context.Context, id, key string) (obj store.Object, torn bool, err error) {
	body, oi, _, err := s.core.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if isNotFound(err) {
		return store.Object{}, false, storeutil.NotFound(id)
	}
	if err != nil {
		return store.Object{}, false, s.unavailable("get", key, err)
	}
	defer body.Close()
	inf, _, err := s.info(id, oi)
	if err != nil {
		return store.Object{}, false, err
	}
	if storeutil.Expired(inf.Expires, storeutil.Now()) {
		s.dropExpired(ctx, id, oi.ETag)
		return store.Object{}, false, storeutil.NotFound(id)
	}
	buf := bytes.NewBuffer(make([]byte, 0, max(oi.Size, 0)))
	if _, err := io.Copy(buf, body); err != nil {
		return store.Object{}, false, s.unavailable("read", key, err)
	}
	data := buf.Bytes()
	if int64(len(data)) != inf.Size || store.Checksum(data) != inf.SHA256 {
		return store.Object{}, true, nil
	}
	return store.Object{Data: data, Info: inf}, false, nil
}

// Stat returns the info of the blob under id, or store.ErrNotFound (one HEAD).
func (s *Store) Stat(ctx context.Context, id string) (store.Info, error) {
	if err := store.CheckID(id); err != nil {
		return store.Info{}, err
	}
	inf, etag, exists, err := s.head(ctx, id)
	if err != nil {
		return store.Info{}, err
	}
	if !exists {
		return store.Info{}, storeutil.NotFound(id)
	}
	if storeutil.Expired(inf.Expires, storeutil.Now()) {
		s.dropExpired(ctx, id, etag)
		return store.Info{}, storeutil.NotFound(id)
	}
	return inf, nil
}

// dropExpired deletes the expired object of id if its ETag is still etag.
// Failures are ignored: the blob reads as absent either way.
func (s *Store) dropExpired(ctx context.Context, id, etag string) {
	_, cur, exists, err := s.head(ctx, id)
	if err != nil || !exists || cur != etag {
		return
	}
	_ = s.core.RemoveObject(ctx, s.bucket, s.Key(id), minio.RemoveObjectOptions{})
}

// Put stores data under id if cond holds, else it returns store.ErrConflict.
// See the package documentation for how the condition is enforced.
func (s *Store) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	if err := store.CheckID(id); err != nil {
		return store.Info{}, err
	}
	key := s.Key(id)
	for attempt := 0; ; attempt++ {
		old, etag, exists, err := s.head(ctx, id)
		if err != nil {
			return store.Info{}, err
		}
		now := storeutil.Now()
		live := exists && !storeutil.Expired(old.Expires, now)
		if err := storeutil.Check(id, cond, live, old.Version); err != nil {
			return store.Info{}, err
		}
		var prev *store.Info
		if live {
			prev = &old
		}
		inf := storeutil.NextInfo(id, data, now, s.ttl, Source, prev)
		sum := md5.Sum(data) // the ETag of a single-part upload, for checking reads
		meta := map[string]string{metaInfoKey: encodeInfo(inf, hex.EncodeToString(sum[:]))}
		opts := minio.PutObjectOptions{
			UserMetadata:     meta,
			ContentType:      "application/octet-stream",
			DisableMultipart: true,
		}
		conditional := cond != (store.Cond{})
		if conditional {
			if exists {
				opts.SetMatchETag(etag)
			} else {
				opts.SetMatchETagExcept("*")
			}
		}
		_, err = s.core.Client.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)), opts)
		if err == nil {
			return inf, nil
		}
		if conditional && (isPreconditionFailed(err) || isNotFound(err)) {
			if s.landed(ctx, id, inf) {
				// The client library retried a write whose answer was
				// lost, and the retry met the object that write stored.
				return inf, nil
			}
			// Something replaced or removed the object since the HEAD. When
			// the object we saw was expired the write only had to keep
			// others from racing us, so look again; otherwise the caller's
			// condition was certainly broken.
			if exists != live && attempt < 5 {
				continue
			}
			return store.Info{}, storeutil.Conflict(id, "it was changed by another writer")
		}
		return store.Info{}, s.unavailable("put", key, err)
	}
}

// landed reports whether the object stored under id now is the one a Put
// of inf wrote (its version is that Put's own).
func (s *Store) landed(ctx context.Context, id string, inf store.Info) bool {
	cur, _, exists, err := s.head(ctx, id)
	return err == nil && exists && cur.Version == inf.Version
}

// Delete removes the blob under id; a missing id is not an error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := store.CheckID(id); err != nil {
		return err
	}
	key := s.Key(id)
	err := s.core.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && !isNotFound(err) {
		return s.unavailable("delete", key, err)
	}
	return nil
}

// List returns the info of every live blob under the prefix, sorted by id:
// one listing plus one HEAD per object (eight at a time). Objects whose
// keys this store does not produce are ignored; expired ones are deleted.
// Objects with a key of this store but without its metadata, or with
// metadata it cannot parse, are skipped and reported in a
// *store.UnreadableError returned with the readable entries. Any other
// failure (the listing or a HEAD fails) fails the whole call.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ids []string
	for obj := range s.core.Client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, s.unavailable("list", s.prefix, obj.Err)
		}
		if id, ok := s.idOf(obj.Key); ok {
			ids = append(ids, id)
		}
	}
	var (
		mu       sync.Mutex
		list     = []store.Info{}
		skipped  []store.Skipped
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, 8)
	)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			inf, err := s.Stat(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				list = append(list, inf)
			case errors.Is(err, store.ErrNotFound): // deleted or expired meanwhile
			case errors.Is(err, store.ErrUnreadable):
				skipped = append(skipped, store.Skipped{ID: id, Key: s.Key(id), Err: err})
			case firstErr == nil:
				firstErr = err
				cancel()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list, store.NewUnreadableError(skipped)
}

// Backend names the backend in traces and metrics: Source.
func (s *Store) Backend() string { return Source }

// Close releases idle connections.
func (s *Store) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}
