//! The rules on plain data: the statements each dialect runs, the decisions both backends take.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_protocol::message::TranscriptMessage;

use super::{list, pairing, sessions, transcript};
use crate::keys::{SessionKey, SessionKind};
use crate::store::dialect::{POSTGRES, Param, SQLITE, spell};
use crate::store::{
    Cursor, ListQuery, PairingAdmission, PairingAsk, PairingRecord, SessionEntry, StoreError,
};

fn key(s: &str) -> SessionKey {
    SessionKey::from_canonical(s.to_string())
}

fn query() -> ListQuery {
    ListQuery {
        agent_id: Some("main".into()),
        kinds: vec![SessionKind::Group, SessionKind::Main],
        search: Some("Ops".into()),
        exclude_keys: vec!["global".into(), "unknown".into()],
        cursor: Some(Cursor {
            updated_at: 7,
            key: key("agent:main:b"),
        }),
        limit: 2,
        ..ListQuery::default()
    }
}

#[test]
fn a_list_filters_before_its_limit_in_each_dialect() {
    let cols = "SELECT s.key";
    let sqlite = list::statement(&query(), SQLITE);
    let tail = sqlite.sql.split_once(" WHERE ").map(|(_, t)| t).unwrap();
    assert!(sqlite.sql.starts_with(cols));
    assert_eq!(
        tail,
        "1 = 1 AND s.archived_at IS NULL AND s.agent_id = ?1 AND s.kind IN (?2, ?3) \
         AND (instr(lower(s.key), ?4) > 0 OR instr(lower(ifnull(s.label, '')), ?4) > 0 \
         OR instr(lower(ifnull(s.display_name, '')), ?4) > 0) AND s.key <> ?5 AND s.key <> ?6 \
         AND (s.updated_at < ?7 OR (s.updated_at = ?7 AND s.key > ?8)) \
         ORDER BY s.updated_at DESC, s.key ASC LIMIT ?9"
    );
    assert_eq!(
        sqlite.params,
        vec![
            Param::from("main"),
            "group".into(),
            "main".into(),
            "ops".into(),
            "global".into(),
            "unknown".into(),
            7.into(),
            "agent:main:b".into(),
            3.into(),
        ]
    );

    let postgres = list::statement(&query(), POSTGRES);
    let tail = postgres.sql.split_once(" WHERE ").map(|(_, t)| t).unwrap();
    assert_eq!(
        tail,
        "TRUE AND s.archived_at IS NULL AND s.agent_id = $1 AND s.kind = ANY($2) \
         AND (strpos(lower(s.key), $3) > 0 OR strpos(lower(coalesce(s.label, '')), $3) > 0 \
         OR strpos(lower(coalesce(s.display_name, '')), $3) > 0) AND s.key <> ALL($4) \
         AND (s.updated_at < $5 OR (s.updated_at = $5 AND s.key > $6)) \
         ORDER BY s.updated_at DESC, s.key ASC LIMIT $7"
    );
    assert_eq!(
        postgres.params,
        vec![
            Param::from("main"),
            Param::Texts(vec!["group".into(), "main".into()]),
            "ops".into(),
            Param::Texts(vec!["global".into(), "unknown".into()]),
            7.into(),
            "agent:main:b".into(),
            3.into(),
        ]
    );
}

fn entry(k: &str, updated_at: i64) -> SessionEntry {
    SessionEntry {
        key: key(k),
        session_id: format!("{k}-1"),
        agent_id: "main".into(),
        kind: SessionKind::Other,
        created_at: 1,
        updated_at,
        channel: None,
        chat_type: None,
        display_name: None,
        label: Some("ops".into()),
        spawned_by: None,
        model: Some("m".into()),
        thinking_level: None,
        verbose_level: None,
        system_sent: true,
        aborted_last_run: true,
        send_policy: None,
        last_channel: None,
        last_to: None,
        last_account_id: None,
        last_thread_id: None,
        delivery_context: None,
        input_tokens: 10,
        output_tokens: 5,
        total_tokens: 15,
        context_tokens: Some(15),
        archived_at: None,
        last_seq: 4,
        last_model: None,
        cost_usd: 0.5,
    }
}

#[test]
fn a_page_keeps_its_limit_and_points_after_its_last_row() {
    let rows = vec![entry("a", 9), entry("b", 8), entry("c", 7)];
    let page = list::page(rows.clone(), 2);
    assert_eq!(page.entries, rows[..2].to_vec());
    assert_eq!(
        page.next_cursor,
        Some(Cursor {
            updated_at: 8,
            key: key("b")
        })
    );
    assert_eq!(list::page(rows, 3).next_cursor, None);
}

#[test]
fn a_reset_clears_counters_and_run_flags_and_keeps_settings() {
    let mut e = entry("a", 9);
    sessions::reset(&mut e, "a-2".into(), 5);
    let want = SessionEntry {
        session_id: "a-2".into(),
        input_tokens: 0,
        output_tokens: 0,
        total_tokens: 0,
        context_tokens: None,
        cost_usd: 0.0,
        system_sent: false,
        aborted_last_run: false,
        // A clock that stepped back does not move updatedAt back.
        updated_at: 9,
        ..entry("a", 9)
    };
    assert_eq!(e, want);
}

#[test]
fn a_label_is_free_for_its_own_session_only() {
    let holder = entry("a", 1);
    assert!(sessions::check_label(Some(&holder), "main", "ops", "agent:main:x").is_err());
    assert!(sessions::check_label(Some(&holder), "main", "ops", "a").is_ok());
    assert!(sessions::check_label(None, "main", "ops", "b").is_ok());
}

fn user(text: &str, kind: Option<&str>) -> TranscriptMessage {
    let mut m = json!({"role": "user", "content": text, "timestamp": 3});
    if let Some(kind) = kind {
        m["provenance"] = json!({ "kind": kind });
    }
    serde_json::from_value(m).unwrap()
}

#[test]
fn appended_messages_follow_the_last_seq_and_the_newest_summary_is_marked() {
    let messages = vec![
        user("one", None),
        user("summary", Some("compaction")),
        user("two", Some("agent")),
    ];
    let numbered = transcript::number(4, messages).unwrap();
    let seqs: Vec<i64> = numbered.rows.iter().map(|r| r.seq).collect();
    assert_eq!(
        (seqs, numbered.last_seq, numbered.summary_seq),
        (vec![5, 6, 7], 7, Some(6))
    );
    let appended = transcript::appended(entry("a", 9), &numbered, 20, false);
    assert_eq!(
        (
            appended.entry.last_seq,
            appended.entry.updated_at,
            appended.seqs
        ),
        (7, 20, vec![5, 6, 7])
    );
    let none = transcript::number(7, vec![user("three", None)]).unwrap();
    assert_eq!(none.summary_seq, None);
}

fn request(sender: &str, created_at: i64, approved_at: Option<i64>) -> PairingRecord {
    PairingRecord {
        channel: "telegram".into(),
        account_id: "bot".into(),
        sender_id: sender.into(),
        username: None,
        code: "ABCD1234".into(),
        created_at,
        approved_at,
        source: "m1".into(),
    }
}

#[test]
fn pairing_admits_the_approved_answers_the_pending_and_keeps_room() {
    let ask = PairingAsk {
        record: request("u1", 0, None),
        ttl_ms: 100,
        max_pending: 2,
    };
    let since = pairing::since(&ask, 1_000);
    assert_eq!(since, 900);
    assert_eq!(
        pairing::known(Some(request("u1", 10, Some(20))), since),
        Some(PairingAdmission::Approved)
    );
    assert_eq!(
        pairing::known(Some(request("u1", 950, None)), since),
        Some(PairingAdmission::Pending(request("u1", 950, None)))
    );
    // An expired request decides nothing: a new one may be due.
    assert_eq!(pairing::known(Some(request("u1", 900, None)), since), None);
    assert_eq!(pairing::fresh(&ask, 2, 1_000), PairingAdmission::Full);
    assert_eq!(
        pairing::fresh(&ask, 1, 1_000),
        PairingAdmission::Created(request("u1", 1_000, None))
    );
}

#[test]
fn a_code_approves_one_pending_request_or_says_why_not() {
    let mut other = request("u2", 5, None);
    other.code = "ZZZZ0000".into();
    let approved = pairing::approve(
        vec![request("u1", 5, None), other.clone()],
        ("telegram", "abcd1234"),
        50,
    )
    .unwrap();
    assert_eq!(approved, request("u1", 5, Some(50)));
    let none = pairing::approve(vec![other.clone()], ("telegram", "abcd1234"), 50);
    assert!(matches!(none, Err(StoreError::NotFound(why)) if why.contains("no pending")));
    let mut twice = request("u1", 5, None);
    twice.account_id = "other".into();
    let both = pairing::approve(
        vec![request("u1", 5, None), twice],
        ("telegram", "ABCD1234"),
        50,
    );
    assert!(matches!(both, Err(StoreError::NotFound(why)) if why.contains("--account")));
}

#[test]
fn a_neutral_statement_is_spelled_for_postgres() {
    assert_eq!(spell(transcript::HISTORY, SQLITE), transcript::HISTORY);
    assert_eq!(
        spell(transcript::HISTORY, POSTGRES),
        "SELECT seq, body FROM messages WHERE session_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3"
    );
}
