//! The WAL's checkpoints taken beside the writer (`checkpoint.rs`).

use std::time::{Duration, Instant};

use super::tests::{k, new_session, user};
use super::*;
use crate::store::SessionStore;

/// Appends `n` messages of about 6 KB each (two overflow pages) to one session, one commit each.
async fn append_large(store: &SqliteStore, from: usize, n: usize) {
    let body = "x".repeat(6000);
    for i in from..from + n {
        let key = "agent:main:large";
        store
            .append(
                &k(key),
                Some(new_session(key)),
                vec![user(&format!("{i} {body}"))],
            )
            .await
            .unwrap();
    }
}

/// Waits until the checkpointer has taken at least one checkpoint and then none for 300 ms
/// (the last one asked for is done); answers how many it took.
async fn checkpoints_settle(store: &SqliteStore) -> u64 {
    let t0 = Instant::now();
    let (mut seen, mut since) = (0, Instant::now());
    while t0.elapsed() < Duration::from_secs(30) {
        let taken = store.inner.writer.checkpoints_taken();
        if taken != seen {
            (seen, since) = (taken, Instant::now());
        } else if taken > 0 && since.elapsed() >= Duration::from_millis(300) {
            return taken;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the checkpointer took {seen} checkpoints and did not settle within 30 s");
}

#[tokio::test]
async fn the_wal_is_checkpointed_beside_the_writer_and_then_reused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let (db, wal) = (
        dir.path().join(DATABASE_FILE),
        dir.path().join("switchboard.db-wal"),
    );
    let size = |path: &std::path::Path| std::fs::metadata(path).unwrap().len();
    let db_before = size(&db);
    // About 4,500 WAL pages: past the mark at which the checkpointer is asked, once (asked at
    // every commit past it, it took one for nearly every commit until the WAL started over).
    append_large(&store, 0, 700).await;
    assert_eq!(
        checkpoints_settle(&store).await,
        1,
        "the checkpointer was asked more than once for one crossing of the mark"
    );
    assert!(
        size(&db) >= db_before + 2_000_000,
        "the database file did not receive the WAL's pages: {} bytes, {db_before} before",
        size(&db)
    );
    // Every frame is copied now: the next writes start the WAL over instead of growing it.
    let wal_full = size(&wal);
    append_large(&store, 700, 300).await;
    assert!(
        size(&wal) <= wal_full,
        "the WAL grew from {wal_full} to {} bytes after its checkpoint",
        size(&wal)
    );
    store.close().await;
    let conn = Connection::open(&db).unwrap();
    let kept: i64 = conn
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kept, 1000, "messages lost across the checkpoints");
}
