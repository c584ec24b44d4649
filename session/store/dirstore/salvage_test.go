package dirstore_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/storetest"
)

// fileDamages damage the .session file at path in the ways a
// file can be damaged on disk.
var fileDamages = map[string]func(t *testing.T, path string){
	"Garbage": func(t *testing.T, path string) {
		writeFile(t, path, []byte("this is not a session file\x00\xff"))
	},
	"Empty": func(t *testing.T, path string) { truncateFile(t, path, 0) },
	"TruncatedHeader": func(t *testing.T, path string) {
		truncateFile(t, path, int64(len("monty-session-v1\n{\"id\":")))
	},
	"TruncatedData": func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		truncateFile(t, path, fi.Size()-3)
	},
	"FlippedBit": func(t *testing.T, path string) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)-1] ^= 1
		writeFile(t, path, raw)
	},
	"ForeignFormat": func(t *testing.T, path string) {
		// A blob of another store's layout (the tiered envelope).
		writeFile(t, path, []byte("MTS1\x05{\"v\":1}data"))
	},
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncateFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedFileIsUnreadableNotAnOutage: every kind of damage to one file
// is reported for that entry as store.ErrUnreadable; the store keeps
// serving the others. Salvage hands over the file's bytes, and Put with
// its token replaces exactly that file.
func TestDamagedFileIsUnreadableNotAnOutage(t *testing.T) {
	for name, damage := range fileDamages {
		t.Run(name, func(t *testing.T) {
			ctx := storetest.Ctx(t)
			dir := t.TempDir()
			s := open(t, dir, dirstore.Options{})
			for _, id := range []string{"ns/victim", "ns/bystander"} {
				if _, err := s.Put(ctx, id, bytes.Repeat([]byte(id), 20), store.Cond{}); err != nil {
					t.Fatal(err)
				}
			}
			path := fileOf(dir, "ns/victim")
			damage(t, path)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}

			_, err = s.Get(ctx, "ns/victim")
			if !errors.Is(err, store.ErrUnreadable) {
				t.Fatalf("Get of a damaged file: %v; want ErrUnreadable", err)
			}
			if _, err := s.Get(ctx, "ns/bystander"); err != nil {
				t.Fatalf("Get of another id: %v", err)
			}
			// A conditional Put does not guess over damage.
			if _, err := s.Put(ctx, "ns/victim", []byte("x"), store.Cond{IfAbsent: true}); !errors.Is(err, store.ErrUnreadable) && !errors.Is(err, store.ErrConflict) {
				t.Fatalf("IfAbsent Put over a damaged file: %v", err)
			}

			data, token, err := s.Salvage(ctx, "ns/victim", 1<<20)
			if err != nil {
				t.Fatalf("Salvage: %v", err)
			}
			if !bytes.Equal(data, raw) {
				t.Fatalf("Salvage returned %q, the file holds %q", data, raw)
			}
			info, err := s.Put(ctx, "ns/victim", []byte("fresh"), store.Cond{IfVersion: token})
			if err != nil {
				t.Fatalf("Put with the Salvage token: %v", err)
			}
			storetest.CheckInfo(t, info, "ns/victim", []byte("fresh"))
			if obj, err := s.Get(ctx, "ns/victim"); err != nil || string(obj.Data) != "fresh" {
				t.Fatalf("after the replacement: %q, %v", obj.Data, err)
			}
			// The token named the damaged file: it no longer matches.
			if _, err := s.Put(ctx, "ns/victim", []byte("again"), store.Cond{IfVersion: token}); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("second Put with the same token: %v; want ErrConflict", err)
			}
			// The replacement is a normal blob: compare-and-set goes on.
			if _, err := s.Put(ctx, "ns/victim", []byte("next"), store.Cond{IfVersion: info.Version}); err != nil {
				t.Fatalf("Put over the replacement: %v", err)
			}
		})
	}
}

// TestSalvageTokenLosesToARepair: a file repaired (or replaced by another
// process) between Salvage and Put is not overwritten.
func TestSalvageTokenLosesToARepair(t *testing.T) {
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	s := open(t, dir, dirstore.Options{})
	if _, err := s.Put(ctx, "r", []byte("good"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fileOf(dir, "r"), []byte("garbage"))
	_, token, err := s.Salvage(ctx, "r", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Another process repairs it meanwhile.
	other := open(t, dir, dirstore.Options{})
	if _, err := other.Put(ctx, "r", []byte("repaired"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "r", []byte("mine"), store.Cond{IfVersion: token}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Put with a stale Salvage token: %v; want ErrConflict", err)
	}
	// Damaged again, with other garbage of the same size: still a conflict.
	writeFile(t, fileOf(dir, "r"), []byte("GARBAGE"))
	if _, err := s.Put(ctx, "r", []byte("mine"), store.Cond{IfVersion: token}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Put with a token of other bytes: %v; want ErrConflict", err)
	}
	// Removed: a conflict too (IfVersion needs the entry).
	if err := os.Remove(fileOf(dir, "r")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "r", []byte("mine"), store.Cond{IfVersion: token}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Put with a token of a removed file: %v; want ErrConflict", err)
	}
}

// TestSalvageRefusals: what Salvage cannot hand over is refused as
// unreadable (not as an outage), a missing file as not found.
func TestSalvageRefusals(t *testing.T) {
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	s := open(t, dir, dirstore.Options{})
	if _, _, err := s.Salvage(ctx, "missing", 1<<20); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Salvage of a missing id: %v; want ErrNotFound", err)
	}
	// A directory where the file should be.
	if err := os.Mkdir(fileOf(dir, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "dir"); !errors.Is(err, store.ErrUnreadable) {
		t.Errorf("Get of a directory: %v; want ErrUnreadable", err)
	}
	if _, _, err := s.Salvage(ctx, "dir", 1<<20); !errors.Is(err, store.ErrUnreadable) {
		t.Errorf("Salvage of a directory: %v; want ErrUnreadable", err)
	}
	// Larger than the caller accepts.
	if _, err := s.Put(ctx, "big", bytes.Repeat([]byte{'x'}, 4096), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Salvage(ctx, "big", 100); !errors.Is(err, store.ErrUnreadable) {
		t.Errorf("Salvage over max: %v; want ErrUnreadable", err)
	}
	// A token that Salvage did not make.
	if _, err := s.Put(ctx, "big", []byte("x"), store.Cond{IfVersion: "salvaged-nonsense"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Put with a made-up token: %v; want ErrConflict", err)
	}
	if os.Geteuid() != 0 {
		if err := os.Chmod(fileOf(dir, "big"), 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Salvage(ctx, "big", 1<<20); !errors.Is(err, store.ErrUnreadable) {
			t.Errorf("Salvage of a file without permission: %v; want ErrUnreadable", err)
		}
	}
}
