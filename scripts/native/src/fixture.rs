//! The directory mount-fs cases see at `/mnt` (their input `root`).
//!
//! Reconstructed from the cases (`mount_fs__walk_glob.py` lists the layout):
//!
//! ```text
//! hello.txt              "hello world\n"
//! empty.txt              ""
//! data.bin               b"\x00\x01\x02\x03"
//! readonly.txt           "readonly content"   (mode 0o444)
//! subdir/nested.txt      "nested content"
//! subdir/deep/file.txt   "deep file"
//! subdir/deep/dangling   symlink to a missing target (mounts hide it)
//! ```
//!
//! Every case gets a fresh copy, so writes never leak between cases. The Go
//! runner builds the same tree.

use std::{
    fs, io,
    path::{Path, PathBuf},
    sync::atomic::{AtomicUsize, Ordering},
};

/// A fresh fixture directory, removed on drop.
pub struct FixtureDir {
    path: PathBuf,
}

impl FixtureDir {
    pub fn new() -> io::Result<Self> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("monty-native-fixture-{}-{n}", std::process::id()));
        if path.exists() {
            fs::remove_dir_all(&path)?;
        }
        write_fixture(&path)?;
        // Canonical, so the mount does not depend on a symlinked temp dir.
        let path = path.canonicalize()?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FixtureDir {
    fn drop(&mut self) {
        let _ = make_writable(&self.path);
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn write_fixture(root: &Path) -> io::Result<()> {
    fs::create_dir_all(root.join("subdir/deep"))?;
    fs::write(root.join("hello.txt"), "hello world\n")?;
    fs::write(root.join("empty.txt"), "")?;
    fs::write(root.join("data.bin"), b"\x00\x01\x02\x03")?;
    fs::write(root.join("readonly.txt"), "readonly content")?;
    fs::write(root.join("subdir/nested.txt"), "nested content")?;
    fs::write(root.join("subdir/deep/file.txt"), "deep file")?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::os::unix::fs::symlink("missing-target", root.join("subdir/deep/dangling"))?;
        fs::set_permissions(root.join("readonly.txt"), fs::Permissions::from_mode(0o444))?;
    }
    Ok(())
}

fn make_writable(root: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let ro = root.join("readonly.txt");
        if ro.exists() {
            fs::set_permissions(ro, fs::Permissions::from_mode(0o644))?;
        }
    }
    let _ = root;
    Ok(())
}
