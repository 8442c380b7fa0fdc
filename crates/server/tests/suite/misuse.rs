//! The misuse corpus (SPEC §12, docs/protocol.md "Unknown fields"): every case of
//! `tests/corpus/misuse.jsonl` is sent as a careless caller would — a misspelt or stray field,
//! a value of the wrong type, a key that is no key, a body that is no body — through the door it
//! names, and must be refused with its code and a message that names what was wrong. After the
//! whole corpus the gateway still serves, made nothing it was refused, and wrote nothing outside
//! its state dir. The corpus's `cli` cases run in the CLI's suite, its `store_url` cases here.

use serde_json::{Value, json};
use switchboard_core::config::{Config, WebhookAccount};
use switchboard_server::client::{ClientError, GatewayClient};

use super::harness::{TOKEN, TestGateway, raw_http};

const CORPUS: &str = include_str!("../corpus/misuse.jsonl");
const HOOK_TOKEN: &str = "hook-secret-misuse";
const ACCOUNT_TOKEN: &str = "site-secret-misuse";
/// A name no file may ever be given: the corpus's keys try to reach it (`../../sb-escape-probe`).
const PROBE: &str = "sb-escape-probe";

/// Agents `main` and `ops`, hooks on, a webhook account `site`.
fn config() -> Config {
    let mut config = super::input_errors::two_agents();
    config.hooks.enabled = true;
    config.hooks.token = Some(HOOK_TOKEN.into());
    config.channels.webhook.enabled = true;
    config.channels.webhook.accounts.insert(
        "site".into(),
        WebhookAccount {
            url: Some("http://127.0.0.1:9/inbox".into()),
            token: Some(ACCOUNT_TOKEN.into()),
            ..Default::default()
        },
    );
    config
}

/// The corpus's cases, each with its line.
fn cases() -> Vec<(usize, Value)> {
    CORPUS
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let case = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("misuse.jsonl line {}: {e}", i + 1));
            (i + 1, case)
        })
        .collect()
}

/// What a refusal said: its code (a gateway code or a JSON-RPC number) and message.
struct Said {
    status: Option<u16>,
    code: Value,
    message: String,
    /// The whole answer (HTTP doors), for the cases that expect one (`expect`).
    answer: Value,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_of_the_corpus_is_refused_naming_what_was_wrong() {
    let gw = TestGateway::start_with(config()).await;
    let mut client = gw.client().await;
    client
        .request(
            "chat.inject",
            json!({"sessionKey": "main", "message": "hello"}),
        )
        .await
        .unwrap();
    let cases = cases();
    let mut by_door = std::collections::BTreeMap::<String, usize>::new();
    let mut wrong = Vec::new();
    let mut task = String::new();
    for (line, case) in &cases {
        // `$task`: the task the last case that saved one made.
        let case =
            &serde_json::from_str::<Value>(&case.to_string().replace("$task", &task)).unwrap();
        let door = case["door"].as_str().unwrap_or_default();
        let said = match door {
            "ws" => ws(&mut client, case).await,
            "rpc" => rpc(&gw, case).await,
            "http" => http(&gw, case).await,
            "tool" => tool(&mut client, case).await,
            "config" => config_text(case),
            "store_url" => store_url(case),
            "cli" | "trace" => continue,
            other => panic!("misuse.jsonl line {line}: no door {other:?}"),
        };
        wrong.extend(check(*line, case, &said));
        if case["save"] == "task" {
            task = said.answer["result"]["task"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
        *by_door.entry(door.to_string()).or_default() += 1;
    }
    assert!(
        wrong.is_empty(),
        "{} cases answered wrongly:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // Every method that reads params has its stray-field case.
    for method in switchboard_server::methods::method_names() {
        let covered = cases.iter().any(|(_, c)| {
            c["door"] == "ws" && c["method"] == method && c["params"].get("colour").is_some()
        });
        let exempt =
            switchboard_server::methods::ANY_PARAMS.contains(&method) || method == "connect";
        assert!(
            covered || exempt,
            "misuse.jsonl has no stray-field case for {method}"
        );
    }
    let total: usize = by_door.values().sum();
    assert!(total >= 300, "{total} cases ran: {by_door:?}");
    for door in ["ws", "rpc", "http", "tool", "config", "store_url"] {
        assert!(
            by_door.contains_key(door),
            "no case for {door}: {by_door:?}"
        );
    }
    // Still serving, on the same connection, and nothing refused was made.
    let health = client.request("health", Value::Null).await.unwrap();
    assert_eq!(health["ok"], true);
    let listed = client
        .request("sessions.list", json!({"limit": 1000}))
        .await
        .unwrap();
    let keys: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["key"].as_str())
        .collect();
    for key in &keys {
        assert!(
            !key.contains("nobody") && !key.contains("ghost") && !key.contains(PROBE),
            "a refused key was made: {keys:?}"
        );
    }
    nothing_outside(&gw);
    gw.stop().await;
}

/// No file or folder named [`PROBE`] anywhere the corpus's keys aimed at, and none in the
/// state dir (with SQLite: the transcripts' folders are there).
fn nothing_outside(gw: &TestGateway) {
    for place in ["/", "/tmp", "/etc"] {
        let probe = std::path::Path::new(place).join(PROBE);
        assert!(!probe.exists(), "{} was made", probe.display());
    }
    let Some(transcript) = gw.engine.store().transcript_path("main", "probe") else {
        return;
    };
    let home = transcript.ancestors().nth(4).unwrap().to_path_buf();
    let parent = home.parent().unwrap();
    assert!(!parent.join(PROBE).exists());
    let mut stack = vec![home];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            assert!(!name.contains(PROBE), "{} was made", entry.path().display());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
}

/// What is wrong with the case's refusal: it must carry its code (and status) and name each of
/// `names`, and none of `not`.
fn check(line: usize, case: &Value, said: &Said) -> Vec<String> {
    let place = format!("line {line} ({})", case["note"]);
    let mut wrong = Vec::new();
    if let Some(status) = case["status"].as_u64()
        && said.status != Some(status as u16)
    {
        wrong.push(format!(
            "{place}: status {:?}: {}",
            said.status, said.message
        ));
    }
    if !case["code"].is_null() && said.code != case["code"] {
        wrong.push(format!("{place}: code {}: {}", said.code, said.message));
    }
    for name in case["names"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if !said.message.contains(name) {
            wrong.push(format!("{place}: does not name {name:?}: {}", said.message));
        }
    }
    for pair in case["expect"].as_array().into_iter().flatten() {
        let (path, want) = (pair[0].as_str().unwrap_or_default(), &pair[1]);
        let got = at(&said.answer, path);
        if &got != want {
            wrong.push(format!(
                "{place}: {path} is {got}, not {want}: {}",
                said.answer
            ));
        }
    }
    for name in case["not"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if said.message.contains(name) {
            wrong.push(format!("{place}: names {name:?}: {}", said.message));
        }
    }
    wrong
}

/// The value at a dotted `path` of `answer`; a last segment `len` is the length of an array
/// (0 when the field is absent).
fn at(answer: &Value, path: &str) -> Value {
    let mut node = answer;
    for segment in path.split('.') {
        if segment == "len" {
            return json!(node.as_array().map_or(0, Vec::len));
        }
        node = &node[segment];
    }
    node.clone()
}

async fn ws(client: &mut GatewayClient, case: &Value) -> Said {
    let method = case["method"].as_str().unwrap();
    match client.request(method, case["params"].clone()).await {
        Err(ClientError::Gateway(e)) => Said {
            status: None,
            code: json!(e.code),
            message: e.message,
            answer: Value::Null,
        },
        other => Said {
            status: None,
            code: json!("ANSWERED"),
            message: format!("{other:?}"),
            answer: Value::Null,
        },
    }
}

async fn rpc(gw: &TestGateway, case: &Value) -> Said {
    let body = json!({"method": case["method"], "params": case["params"]}).to_string();
    let answer = post(
        gw,
        "/rpc",
        &[("Authorization", format!("Bearer {TOKEN}"))],
        &body,
    )
    .await;
    refusal_of(answer)
}

/// A body (`body`, JSON, or `raw`, text) posted to `path` with the case's token and headers.
async fn http(gw: &TestGateway, case: &Value) -> Said {
    let body = match &case["raw"] {
        Value::String(raw) => raw.clone(),
        _ => case["body"].to_string(),
    };
    let token = match case["token"].as_str() {
        Some("hook") => Some(HOOK_TOKEN),
        Some("account") => Some(ACCOUNT_TOKEN),
        Some("none") => None,
        _ => Some(TOKEN),
    };
    let scheme = case["scheme"].as_str().unwrap_or("Bearer");
    let mut headers: Vec<(&str, String)> = token
        .map(|t| ("Authorization", format!("{scheme} {t}")))
        .into_iter()
        .collect();
    for (name, value) in case["headers"].as_object().into_iter().flatten() {
        headers.push((
            name.as_str(),
            value.as_str().unwrap_or_default().to_string(),
        ));
    }
    let path = case["path"].as_str().unwrap();
    if let Some(chunks) = case["chunks"].as_u64() {
        return refusal_of(post_chunked(gw, path, &headers, chunks).await);
    }
    refusal_of(post(gw, path, &headers, &body).await)
}

/// `chunks` chunks of 512 KiB, sent without a length (`Transfer-Encoding: chunked`).
async fn post_chunked(
    gw: &TestGateway,
    path: &str,
    headers: &[(&str, String)],
    chunks: u64,
) -> super::harness::RawResponse {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let chunk = format!("{:x}\r\n{}\r\n", 512 * 1024, "x".repeat(512 * 1024));
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra}\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{}0\r\n\r\n",
        chunk.repeat(chunks as usize)
    );
    raw_http(gw.addr, &request).await
}

async fn post(
    gw: &TestGateway,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> super::harness::RawResponse {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw_http(gw.addr, &request).await
}

fn refusal_of(answer: super::harness::RawResponse) -> Said {
    let error = &answer.json["error"];
    Said {
        status: Some(answer.status),
        code: error["code"].clone(),
        message: error["message"]
            .as_str()
            .map_or_else(|| answer.body.clone(), str::to_string),
        answer: answer.json,
    }
}

/// A tool called through `tools.invoke` as `main`: its refusal is the tool's error result.
async fn tool(client: &mut GatewayClient, case: &Value) -> Said {
    let params = json!({"sessionKey": "main", "tool": case["tool"], "args": case["args"]});
    match client.request("tools.invoke", params).await {
        Err(ClientError::Gateway(e)) => Said {
            status: None,
            code: json!(e.code),
            message: e.message,
            answer: Value::Null,
        },
        Ok(result) => Said {
            status: None,
            code: json!("TOOL_ERROR"),
            message: result.to_string(),
            answer: Value::Null,
        },
        Err(e) => panic!("{case}: {e}"),
    }
}

/// Config text (or a value nested `nest` deep) loaded as the gateway and `config check` load
/// it: an error, or the unknown settings they refuse.
fn config_text(case: &Value) -> Said {
    let text = match case["nest"].as_u64() {
        Some(depth) => {
            let depth = depth as usize;
            format!("{{gateway: {}{}}}", "[".repeat(depth), "]".repeat(depth))
        }
        None => case["text"].as_str().unwrap().to_string(),
    };
    let message = match switchboard_core::config::load_str(&text, "misuse", &|_| None) {
        Err(e) => e.to_string(),
        Ok(loaded) => loaded.unknown.join("\n"),
    };
    Said {
        status: None,
        code: Value::Null,
        message,
        answer: Value::Null,
    }
}

/// A PostgreSQL URL read as the store reads it at start (and `config check` does).
fn store_url(case: &Value) -> Said {
    let url = case["url"].as_str().unwrap();
    let message = match switchboard_core::store::postgres::check_url(url) {
        Err(e) => e.to_string(),
        Ok(()) => "the URL was taken".to_string(),
    };
    Said {
        status: None,
        code: Value::Null,
        message,
        answer: Value::Null,
    }
}
