//! Helpers shared by the core suites: run a turn in a session and read a transcript.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_core::Engine;
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::runtime::{RunRequest, user_message};
use switchboard_core::store::RunRecord;

/// Submits `message` into `session` (any key form; created if new) on lane `main`; answers the
/// run id once the run is queued.
pub async fn submit(
    engine: &Arc<Engine>,
    session: &str,
    message: &str,
    timeout: Option<Duration>,
) -> String {
    let key = engine.canonical_key(session, None).unwrap();
    let mut request = RunRequest::new(key.as_str(), Lane::Main);
    request.create = Some(engine.new_session(&key));
    request.message = Some(user_message(message, None));
    request.timeout = timeout;
    engine.submit_run(request).await.unwrap().run_id
}

/// One operator turn in `session`, waited for; answers the run's record.
pub async fn turn(engine: &Arc<Engine>, session: &str, message: &str) -> RunRecord {
    let run_id = submit(engine, session, message, None).await;
    engine
        .wait_run(&run_id, Duration::from_secs(60))
        .await
        .unwrap()
        .record
}

/// Every message of `session`'s current transcript (any key form), oldest first.
pub async fn transcript(engine: &Engine, session: &str) -> Vec<Value> {
    let key = engine.canonical_key(session, None).unwrap();
    let entry = engine.store().get(key.as_str()).await.unwrap().unwrap();
    let page = engine
        .store()
        .history(&entry.session_id, 10_000, None)
        .await
        .unwrap();
    page.messages.into_iter().map(|m| m.message).collect()
}
