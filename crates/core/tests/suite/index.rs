//! The reference's session index (`agents/<agentId>/sessions/sessions.json`): written when the
//! engine stops, keyed by session key, with the transcript file, the label and the counters its
//! importer reads.

use serde_json::Value;
use switchboard_core::config::{AgentEntry, Config};
use switchboard_core::store::EntryPatch;
use switchboard_protocol::sessions::Patch;

use super::support::TestEngine;

fn index(t: &TestEngine, agent: &str) -> Value {
    let path = t
        .dir
        .path()
        .join(format!("agents/{agent}/sessions/sessions.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_agent_gets_an_index_of_its_sessions_with_keys_labels_and_files() {
    let mut config = Config::default();
    config.agents.list = vec![
        AgentEntry {
            id: "main".into(),
            ..AgentEntry::default()
        },
        AgentEntry {
            id: "ops".into(),
            ..AgentEntry::default()
        },
    ];
    let t = TestEngine::open(config).await;

    t.turn("agent:main:project-x", "@reply noted").await;
    let label = EntryPatch {
        label: Patch::Set("Project X".into()),
        ..Default::default()
    };
    t.engine
        .store()
        .patch(&t.key("agent:main:project-x"), label)
        .await
        .unwrap();
    let t = t.restart(None).await;
    if t.on_postgres() {
        // No transcript files, so no index beside them: the database is the index.
        let dir = t.dir.path().join("agents/main/sessions");
        assert!(!dir.join("sessions.json").exists());
        eprintln!(
            "index test: PostgreSQL keeps no session index file (docs/scale-out.md); checked that none is written"
        );
        t.engine.close().await;
        return;
    }
    let main = index(&t, "main");
    let entry = &main["agent:main:project-x"];
    assert_eq!(entry["label"], "Project X");
    let file = entry["sessionFile"].as_str().unwrap();
    assert!(std::path::Path::new(file).is_file(), "{file}");
    assert!(file.ends_with(&format!("{}.jsonl", entry["sessionId"].as_str().unwrap())));
    assert!(entry["updatedAt"].as_i64().unwrap() > 0);
    // Each agent's index lists only its sessions.
    let keys: Vec<&String> = main.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["agent:main:main", "agent:main:project-x"]);
    let ops = index(&t, "ops");
    assert!(ops["agent:ops:main"]["sessionId"].is_string(), "{ops}");
    assert!(ops.get("agent:main:project-x").is_none());
    // Health's `sessions.path` names it now that it exists.
    let label = switchboard_core::store::index_label(t.engine.store(), "main");
    assert!(
        label.ends_with("agents/main/sessions/sessions.json"),
        "{label}"
    );
    t.engine.close().await;
}
