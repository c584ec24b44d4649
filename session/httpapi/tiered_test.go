package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/redisstore"
	"github.com/monty-go/monty/session/store/s3store"
	"github.com/monty-go/monty/session/store/storetest"
	"github.com/monty-go/monty/session/store/tiered"
)

// TestTieredStore runs the API over Redis (hot) and S3 (archive): info
// reports where the state is, and a session whose hot copy is gone
// continues from the archive.
func TestTieredStore(t *testing.T) {
	ctx := context.Background()
	prefix := storetest.UniquePrefix(t)
	hot, err := redisstore.New(ctx, redisstore.Options{URL: storetest.RedisURL(t), Prefix: "monty-" + prefix, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	env := storetest.S3(t)
	cold, err := s3store.New(ctx, s3store.Options{Endpoint: env.Endpoint, Bucket: env.Bucket, AccessKey: env.AccessKey, SecretKey: env.SecretKey, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	st, err := tiered.New(tiered.Options{Hot: hot, Cold: cold, ArchiveAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: st}})
	c := srv.client("")
	s := c.run("", "model = {'w': 3, 'b': 1}")
	info := func() httpapi.StateInfo {
		t.Helper()
		status, _, body := c.do("GET", "/state/"+s.SessionID+"/info", nil)
		var i httpapi.StateInfo
		if err := json.Unmarshal(body, &i); status != 200 || err != nil {
			t.Fatalf("info: %d %s", status, body)
		}
		return i
	}
	if i := info(); !i.Exists || i.Source != tiered.SourceHot || i.ExpiresAt == nil {
		t.Fatalf("info after exec: %+v", i)
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := st.ArchiveOnce(ctx); err != nil || n == 0 {
		t.Fatalf("ArchiveOnce: %d %v", n, err)
	}
	// The hot copy expires (here: deleted behind the API's back).
	if err := hot.Delete(ctx, "public/"+s.SessionID); err != nil {
		t.Fatal(err)
	}
	if i := info(); !i.Exists || i.Source != tiered.SourceArchive {
		t.Fatalf("info after the hot copy is gone: %+v", i)
	}
	// The console's approvals page does not read an archived session
	// (reading restores it): it counts it, and it stays archived.
	b := srv.browser(t)
	b.signIn("")
	if _, page := b.get("/ui/approvals"); !strings.Contains(page, "1 archived session was not read") {
		t.Fatalf("approvals page: %s", page)
	}
	if i := info(); i.Source != tiered.SourceArchive {
		t.Fatalf("info after the approvals page: %+v", i)
	}
	if got := c.run(s.SessionID, "model['w'] * 2 + model['b']"); string(got.Result) != "7" {
		t.Fatalf("from the archive: %s", got.Result)
	}
}
