//! A session's id on PostgreSQL (schema version 4): unique through its transcript's row and
//! found through it, with no index of its own in `sessions`, so that the row's updates (two a
//! turn) write one index fewer. A database of version 3 loses that index when a gateway opens
//! it.

use switchboard_core::keys::SessionKey;
use switchboard_core::store::{NewSession, SessionReads, SessionStore};

use super::postgres::{open, options};
use super::support::k;

/// The definitions of the indexes of `sessions` in `schema`, as the test's own connection
/// reads them.
async fn session_indexes(client: &tokio_postgres::Client, schema: &str) -> Vec<String> {
    client
        .query(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'sessions'",
            &[&schema],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_found_by_its_id_which_no_index_of_sessions_holds() {
    let Some(options) = options("a_session_is_found_by_its_id_which_no_index_of_sessions_holds")
    else {
        return;
    };
    let (client, connection) = tokio_postgres::connect(&options.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let schema = &options.schema;

    // A database of the version before: its sessions' ids had an index (a unique constraint).
    let store = open(&options).await.unwrap();
    store.close().await;
    client
        .batch_execute(&format!(
            "ALTER TABLE {schema}.sessions DROP CONSTRAINT IF EXISTS sessions_session_id_key;
             ALTER TABLE {schema}.sessions ADD CONSTRAINT sessions_session_id_key UNIQUE (session_id);
             UPDATE {schema}.schema_version SET version = 3"
        ))
        .await
        .unwrap();
    assert!(
        session_indexes(&client, schema)
            .await
            .iter()
            .any(|def| def.contains("(session_id)")),
        "the version 3 database was not made"
    );

    // Opened, it is brought to this version without that index; the others stay.
    let store = open(&options).await.unwrap();
    let indexes = session_indexes(&client, schema).await;
    assert!(
        !indexes.iter().any(|def| def.contains("session_id")),
        "an index of sessions holds the session's id: {indexes:?}"
    );
    assert!(
        indexes.iter().any(|def| def.contains("(key)"))
            && indexes.iter().any(|def| def.contains("updated_at DESC")),
        "{indexes:?}"
    );

    // Each session is found by its current id, a reset one no longer by its old id.
    let keys: Vec<SessionKey> = ["one", "two", "three"]
        .iter()
        .map(|name| k(&format!("agent:main:ids-{name}")))
        .collect();
    let mut ids = Vec::new();
    for key in &keys {
        let (entry, created) = store
            .create(NewSession::for_key(key, "main", "main"))
            .await
            .unwrap();
        assert!(created, "{key} existed");
        ids.push(entry.session_id);
    }
    for (key, id) in keys.iter().zip(&ids) {
        let found = store.get_by_session_id(id).await.unwrap();
        assert_eq!(found.map(|e| e.key), Some(key.clone()), "{id}");
    }
    let reset = store.reset(&keys[1]).await.unwrap();
    assert_ne!(reset.session_id, ids[1], "the reset kept its id");
    let found = store.get_by_session_id(&reset.session_id).await.unwrap();
    assert_eq!(found.map(|e| e.key), Some(keys[1].clone()));
    let old = store.get_by_session_id(&ids[1]).await.unwrap();
    assert!(old.is_none(), "found by the id its reset left: {old:?}");
    let unknown = store.get_by_session_id("no-such-id").await.unwrap();
    assert!(unknown.is_none(), "{unknown:?}");
    store.close().await;
}
