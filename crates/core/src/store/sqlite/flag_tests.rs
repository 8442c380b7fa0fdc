//! The mirror flag (`transcripts.mirror_behind`, schema 13): set in the commit that puts a
//! mirror behind its database, cleared once the mark caught up, and what a start repairs.
use pretty_assertions::assert_eq;
use rusqlite::Connection;

use super::tests::{k, seed, until, user};
use super::{DATABASE_FILE, SqliteStore};
use crate::store::{SessionStore, mirror};

/// Transcripts whose mark is behind but whose flag is not set: a start would miss them.
const UNFLAGGED_BEHIND: &str =
    "SELECT count(*) FROM transcripts WHERE mirrored_seq < last_seq AND mirror_behind = 0";

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Waits until no transcript is flagged (the writer's pause in the writes came).
async fn until_unflagged(conn: &Connection) {
    until("the flags were never cleared", || {
        count(
            conn,
            "SELECT count(*) FROM transcripts WHERE mirror_behind = 1",
        ) == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mirror_behind_is_flagged_in_its_commit_and_the_flags_clear_at_a_pause() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    for i in 0..4 {
        seed(&store, &format!("agent:main:s{i}"), 2).await;
    }
    let conn = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    let mut seen_behind = 0;
    // A few appends after a pause (each finds its flag cleared), then steady ones (each finds
    // it set).
    for round in 0..60 {
        if round < 5 {
            until_unflagged(&conn).await;
        }
        let appends = (0..4).map(|i| {
            let store = &store;
            async move {
                let key = k(&format!("agent:main:s{i}"));
                store
                    .append(&key, None, vec![user(&format!("r{round}"))])
                    .await
            }
        });
        for appended in futures_util::future::join_all(appends).await {
            appended.unwrap();
        }
        // Right after the commits: their marks wait for the next transaction or a pause.
        seen_behind += count(
            &conn,
            "SELECT count(*) FROM transcripts WHERE mirrored_seq < last_seq",
        );
        assert_eq!(count(&conn, UNFLAGGED_BEHIND), 0, "round {round}");
    }
    assert!(
        seen_behind > 0,
        "no read saw a mark behind: the check above checked nothing"
    );

    // At a pause in the writes the marks catch up and the flags are cleared.
    until_unflagged(&conn).await;
    assert_eq!(count(&conn, UNFLAGGED_BEHIND), 0);
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM transcripts WHERE mirrored_seq = last_seq"
        ),
        4
    );
    store.close().await;
}

#[tokio::test]
async fn a_version_12_database_flags_the_mirrors_behind_and_the_start_repairs_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let behind = seed(&store, "agent:main:a", 6).await;
    let current = seed(&store, "agent:main:b", 3).await;
    store.close().await;
    let path = mirror::transcript_path(dir.path(), "main", &behind);
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() - 10]).unwrap();
    // What schema 12 left after a kill: `a`'s mark behind, found through the old index.
    let conn = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    conn.execute_batch(
        "DROP INDEX transcripts_behind; ALTER TABLE transcripts DROP COLUMN mirror_behind;
         CREATE INDEX transcripts_unmirrored ON transcripts (session_id) WHERE mirrored_seq < last_seq;
         DROP TABLE mirror_checked; PRAGMA user_version = 12;",
    )
    .unwrap();
    conn.execute(
        "UPDATE transcripts SET mirrored_seq = 2 WHERE session_id = ?1",
        [&behind],
    )
    .unwrap();
    drop(conn);

    let store = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        whole,
        "the start repaired the mirror behind"
    );
    store.close().await;
    let conn = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 14);
    let old_index = "SELECT count(*) FROM sqlite_master WHERE name = 'transcripts_unmirrored'";
    assert_eq!(count(&conn, old_index), 0);
    let marks: Vec<(String, i64, i64, i64)> = conn
        .prepare("SELECT session_id, last_seq, mirrored_seq, mirror_behind FROM transcripts ORDER BY last_seq DESC")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(marks, [(behind, 6, 6, 0), (current, 3, 3, 0)]);
}

/// An append reads its transcript's `created_at` and flag right after the entry's columns, at
/// `rows::ENTRY_COLUMN_COUNT`: the count and the entry's column list must agree.
#[tokio::test]
async fn the_append_read_answers_the_transcripts_two_columns_after_the_entrys() {
    let dir = tempfile::tempdir().unwrap();
    let _store = SqliteStore::open(dir.path()).unwrap();
    let conn = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    let statement = conn.prepare(&super::queries::APPEND_ENTRY).unwrap();
    let names = statement.column_names();
    let width = crate::store::rules::rows::ENTRY_COLUMN_COUNT;
    assert_eq!(names.len(), width + 2);
    assert_eq!(names[0], "key");
    assert_eq!(names[width - 1], "cost_usd");
    assert_eq!(&names[width..], ["created_at", "mirror_behind"]);
}
