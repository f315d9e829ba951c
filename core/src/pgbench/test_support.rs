//! Helpers for this module's tests: the fixture folder and scratch folders.

use std::path::{Path, PathBuf};

/// `src/pgbench/testdata` of this crate (`file!()` is relative to the
/// workspace, not to the crate, so the crate's own folder anchors it).
pub fn testdata_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pgbench/testdata")
}

/// A folder under the system temp folder, removed when dropped, so that a
/// failing assertion leaves nothing behind.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "storlab-pgbench-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).expect("create test folder");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn testdata_is_found_and_temp_dirs_clean_up() {
    assert!(testdata_dir().join("README.md").is_file());
    let kept;
    {
        let t = TempDir::new("self-test");
        kept = t.path().to_path_buf();
        std::fs::write(kept.join("f"), "x").unwrap();
    }
    assert!(!kept.exists());
}
