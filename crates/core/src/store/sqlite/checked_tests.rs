//! The mirror check record (`checked.rs`, schema 14): a clean stop that could vouch for every
//! transcript's file lets the next start skip its sweep; a file removed while stopped, or while
//! the gateway ran, brings the sweep back.

use std::path::Path;

use pretty_assertions::assert_eq;
use rusqlite::Connection;

use super::tests::{seed, until};
use super::{DATABASE_FILE, SqliteStore};
use crate::store::mirror;

/// Whether the last stop left a record.
fn recorded(home: &Path) -> bool {
    let conn = Connection::open(home.join(DATABASE_FILE)).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM mirror_checked", [], |r| r.get(0))
        .unwrap();
    n == 1
}

/// Waits until the store's sweep checked every transcript.
async fn until_swept(store: &SqliteStore) {
    until("the sweep never finished", || {
        !store.inner.writer.sweeping()
    })
    .await;
}

/// Waits until the file at `path` exists again (rewritten by the sweep).
async fn until_exists(path: &Path) {
    until("the sweep never rebuilt the removed mirror", || {
        path.exists()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_lets_the_next_start_skip_the_sweep_until_a_mirror_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let store = SqliteStore::open(home).unwrap();
    let a = seed(&store, "agent:main:a", 3).await;
    let b = seed(&store, "agent:main:b", 4).await;
    let (path_a, path_b) = (
        mirror::transcript_path(home, "main", &a),
        mirror::transcript_path(home, "main", &b),
    );
    store.close().await;

    // A stop after the sweep vouches, and the next start skips the sweep.
    let store = SqliteStore::open(home).unwrap();
    until_swept(&store).await;
    store.close().await;
    assert!(recorded(home), "a stop after a whole sweep left no record");
    let store = SqliteStore::open(home).unwrap();
    assert!(
        !store.inner.writer.sweeping(),
        "the start swept all the same"
    );
    store.close().await;
    assert!(
        recorded(home),
        "a stop after a skipped sweep left no record"
    );

    // A file removed while the gateway is stopped: the start sweeps and rewrites it.
    let bytes_b = std::fs::read(&path_b).unwrap();
    std::fs::remove_file(&path_b).unwrap();
    let store = SqliteStore::open(home).unwrap();
    assert!(
        store.inner.writer.sweeping(),
        "a removal while stopped went unseen"
    );
    until_exists(&path_b).await;
    assert_eq!(std::fs::read(&path_b).unwrap(), bytes_b);
    until_swept(&store).await;
    store.close().await;
    assert!(recorded(home));

    // A file removed while the gateway runs, its session idle: the stop does not vouch, and
    // the next start sweeps and rewrites it.
    let store = SqliteStore::open(home).unwrap();
    assert!(!store.inner.writer.sweeping());
    let bytes_a = std::fs::read(&path_a).unwrap();
    std::fs::remove_file(&path_a).unwrap();
    store.close().await;
    assert!(
        !recorded(home),
        "a stop vouched for a mirror removed while it ran"
    );
    let store = SqliteStore::open(home).unwrap();
    assert!(store.inner.writer.sweeping());
    until_exists(&path_a).await;
    assert_eq!(std::fs::read(&path_a).unwrap(), bytes_a);
    store.close().await;
}

/// A session's first write after a start reads where its mirror ends from the file's last line
/// (`mirror::ends_at`): a mirror cut short by hand while the gateway was stopped (its mark
/// current, so the start trusted it) is rewritten whole; an intact one is appended to, and
/// stays the same file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_write_after_a_start_appends_to_an_intact_mirror_and_rewrites_a_cut_one() {
    use std::os::unix::fs::MetadataExt;
    let inode = |path: &Path| std::fs::metadata(path).unwrap().ino();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let intact = seed(&store, "agent:main:intact", 3).await;
    let cut = seed(&store, "agent:main:cut", 3).await;
    store.close().await;
    let intact = mirror::transcript_path(dir.path(), "main", &intact);
    let cut = mirror::transcript_path(dir.path(), "main", &cut);
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let (intact_file, cut_file) = (inode(&intact), inode(&cut));

    let store = SqliteStore::open(dir.path()).unwrap();
    seed(&store, "agent:main:intact", 1).await;
    seed(&store, "agent:main:cut", 1).await;
    until("the mirrors never held the fourth message", || {
        mirror::is_complete(&intact, 4) && mirror::is_complete(&cut, 4)
    })
    .await;
    assert_eq!(
        inode(&intact),
        intact_file,
        "the intact mirror was rewritten"
    );
    assert_ne!(inode(&cut), cut_file, "the cut mirror was appended to");
    let (intact, cut) = (
        std::fs::read(&intact).unwrap(),
        std::fs::read(&cut).unwrap(),
    );
    assert_eq!(
        intact.len(),
        cut.len(),
        "the same messages, the same length"
    );
    store.close().await;
}
