//! The WAL's checkpoints taken beside the writer (`checkpoint.rs`).

use std::time::{Duration, Instant};

use super::tests::{k, new_session, seed, user};
use super::*;
use crate::store::{SessionReads, SessionStore};

/// Appends `n` messages of about 6 KB each (overflow pages) to one session, one commit each.
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

/// Appends one large message at a time until the checkpointer is asked (about 6 WAL pages a
/// message, so the mark is crossed once), numbering them from `from`; answers the next number.
async fn append_until_asked(store: &SqliteStore, from: usize) -> usize {
    let mut n = from;
    while !store.inner.writer.checkpoint_asked() {
        assert!(n < 3000, "the checkpointer was never asked: {n} messages");
        append_large(store, n, 1).await;
        n += 1;
    }
    n
}

/// How many times the WAL at `path` started over: its header's checkpoint sequence number
/// (bytes 12–15, big-endian), which SQLite counts up at each restart.
fn wal_restarts(path: &std::path::Path) -> u32 {
    use std::io::Read as _;
    let mut header = [0; 16];
    std::fs::File::open(path)
        .and_then(|mut wal| wal.read_exact(&mut header))
        .unwrap();
    u32::from_be_bytes([header[12], header[13], header[14], header[15]])
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
    // Writes go on while it copies (on a fast disk the copy may end first; the next test holds
    // it back with a reader): asked at every commit past the mark, as a first version was, the
    // checkpointer took one for nearly every commit until the WAL started over.
    let n = append_until_asked(&store, 0).await;
    append_large(&store, n, 30).await;
    let n = n + 30;
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
    // What was committed during its copy is copied at the next commit, and the write after
    // starts the WAL over (its header counts the restarts).
    append_large(&store, n, 50).await;
    assert_eq!(checkpoints_settle(&store).await, 1);
    assert!(
        wal_restarts(&wal) >= 1,
        "the WAL never started over after its checkpoint: {} bytes",
        size(&wal)
    );
    store.close().await;
    let conn = Connection::open(&db).unwrap();
    let kept: i64 = conn
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kept, n as i64 + 50, "messages lost across the checkpoints");
}

#[tokio::test]
async fn frames_a_reader_kept_from_the_copy_are_copied_once_it_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let wal = dir.path().join("switchboard.db-wal");
    append_large(&store, 0, 100).await;
    // A reader's snapshot from before the mark: neither the checkpointer nor the writer may
    // copy the frames after it while it lasts.
    let reader = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let seen: i64 = reader
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(seen, 100);
    let n = append_until_asked(&store, 100).await;
    append_large(&store, n, 20).await;
    assert_eq!(checkpoints_settle(&store).await, 1);
    append_large(&store, n + 20, 5).await;
    assert_eq!(wal_restarts(&wal), 0, "the WAL started over under a reader");
    reader.execute_batch("COMMIT").unwrap();
    // A few writes later (far from the next mark) the WAL has started over.
    append_large(&store, n + 25, 5).await;
    assert!(
        wal_restarts(&wal) >= 1,
        "the frames the reader kept were never copied: the WAL did not start over"
    );
    store.close().await;
}

/// A connection in WAL mode at `dir`, with the checkpointer hooked to it, and its WAL's path.
fn hooked(
    dir: &std::path::Path,
) -> (
    rusqlite::Connection,
    checkpoint::Checkpoints,
    std::path::PathBuf,
) {
    let path = dir.join("hooked.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch("CREATE TABLE t (b BLOB)").unwrap();
    let checkpoints = checkpoint::Checkpoints::start(&conn, &path).unwrap();
    (conn, checkpoints, dir.join("hooked.db-wal"))
}

/// One commit of about 3,200 pages, past the mark: checked on the WAL file (a 32-byte header,
/// then a 24-byte header and a 4,096-byte page a frame).
fn past_the_mark(conn: &rusqlite::Connection, wal: &std::path::Path) {
    conn.execute("INSERT INTO t VALUES (zeroblob(13000000))", [])
        .unwrap();
    let frames = (std::fs::metadata(wal).unwrap().len() - 32) / (24 + 4096);
    let mark = u64::try_from(checkpoint::NUDGE_PAGES).unwrap();
    assert!(
        frames >= mark,
        "the commit wrote {frames} frames, under the mark"
    );
}

/// A commit that writes nothing: no frame, so the WAL hook is not called.
fn frameless(conn: &rusqlite::Connection) {
    conn.execute_batch("BEGIN IMMEDIATE; COMMIT").unwrap();
}

#[test]
fn a_commit_without_frames_does_not_reset_the_mark() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, checkpoints, wal) = hooked(dir.path());
    checkpoints.counting(&conn, || past_the_mark(&conn, &wal));
    assert!(checkpoints.asked(), "a commit past the mark asks");
    checkpoints.counting(&conn, || frameless(&conn));
    assert!(
        checkpoints.asked(),
        "a commit that wrote no frame was read as an empty WAL: the next commit past the mark \
         would ask again"
    );
    checkpoints.stop();
}

#[test]
fn a_commit_without_frames_reads_no_pages_an_earlier_commit_noted() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, checkpoints, wal) = hooked(dir.path());
    // Noted on this thread and not read (the WAL may start over since, by commits on other
    // threads).
    past_the_mark(&conn, &wal);
    checkpoints.counting(&conn, || frameless(&conn));
    assert!(
        !checkpoints.asked(),
        "a commit that wrote no frame asked for a checkpoint with an earlier commit's pages"
    );
    checkpoints.stop();
}

/// Seeds a session of three messages in a store at `home`, reads them back, and returns the
/// database's page size once the store is closed.
async fn page_size_after_use(home: &std::path::Path) -> u32 {
    let store = SqliteStore::open(home).unwrap();
    let id = seed(&store, "agent:main:a", 3).await;
    let page = store.history(&id, 10, None).await.unwrap();
    assert_eq!(page.messages.len(), 3, "the store lost a message");
    store.close().await;
    let conn = rusqlite::Connection::open(home.join(DATABASE_FILE)).unwrap();
    conn.pragma_query_value(None, "page_size", |r| r.get(0))
        .unwrap()
}

/// A new store's WAL frames carry [`schema::PAGE_SIZE`]-byte pages; a store made with SQLite's
/// default 4,096 keeps it (SQLite would need a `VACUUM` out of WAL mode) and serves as before.
#[tokio::test]
async fn a_new_store_takes_the_smaller_page_and_an_older_one_keeps_its_own() {
    assert_ne!(
        schema::PAGE_SIZE,
        4096,
        "the test can no longer tell them apart"
    );
    let new = tempfile::tempdir().unwrap();
    assert_eq!(page_size_after_use(new.path()).await, schema::PAGE_SIZE);

    let old = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(old.path().join(DATABASE_FILE)).unwrap();
    conn.execute_batch(
        "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE made_before (a);",
    )
    .unwrap();
    drop(conn);
    assert_eq!(page_size_after_use(old.path()).await, 4096);
}
