//! The PostgreSQL store through a Unix socket: a gateway on the same host as its cluster.

use switchboard_core::store::{NewSession, PgOptions, SessionReads, SessionStore};
use switchboard_testkit::postgres::not_run;

use super::postgres::{open, options};
use super::support::k;

/// A gateway beside its cluster connects through the cluster's Unix socket when its URL names
/// the socket's directory, percent-encoded as the host or as `?host=` (libpq's two spellings):
/// the store opens, writes and reads back, and the server sees its connections come through
/// the socket (no client port). NOT RUN when the database's socket is not on this machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_beside_its_cluster_connects_through_its_unix_socket() {
    let test = "a_gateway_beside_its_cluster_connects_through_its_unix_socket";
    let Some(options) = options(test) else {
        return;
    };
    let (tcp, connection) = tokio_postgres::connect(&options.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let show = |row: tokio_postgres::Row| row.get::<_, String>(0);
    let dirs = show(
        tcp.query_one("SHOW unix_socket_directories", &[])
            .await
            .unwrap(),
    );
    let port = show(tcp.query_one("SHOW port", &[]).await.unwrap());
    let dir = dirs
        .split(',')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let socket = std::path::Path::new(&dir).join(format!(".s.PGSQL.{port}"));
    if dir.is_empty() || !socket.exists() {
        return not_run(
            test,
            &format!("no Unix socket of the database here ({dirs:?})"),
        );
    }
    let config: tokio_postgres::Config = options.url.parse().unwrap();
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or(user);
    let encoded = dir.replace('%', "%25").replace('/', "%2F");
    let through_socket = "SELECT count(*) FROM pg_stat_activity \
                          WHERE application_name = 'switchboard' AND client_port = -1";
    for (i, url) in [
        format!("postgres://{user}@{encoded}:{port}/{db}"),
        format!("postgres://{user}@/{db}?host={dir}&port={port}"),
    ]
    .into_iter()
    .enumerate()
    {
        let store = open(&PgOptions {
            url: url.clone(),
            ..options.clone()
        })
        .await;
        let store = store.unwrap_or_else(|e| panic!("{url}: {e}"));
        let key = k(&format!("agent:main:socket-{i}"));
        let (entry, created) = store
            .create(NewSession::for_key(&key, "main", "main"))
            .await
            .unwrap();
        assert!(created, "{url}");
        let read = store
            .get(&key)
            .await
            .unwrap()
            .expect("the session just created");
        assert_eq!(read.session_id, entry.session_id, "{url}");
        let row = tcp.query_one(through_socket, &[]).await.unwrap();
        assert!(
            row.get::<_, i64>(0) >= 1,
            "{url}: no connection of the store through the socket"
        );
        store.close().await;
    }
}
