//! A newcomer's first hour with the real binary: client commands find the gateway of their state
//! dir, say why they cannot reach one, the help describes every option, logs carry no colour
//! codes off a terminal, and `switchboard chat` survives a refused message and a Ctrl-C.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::process::{BIN, GatewayProcess, until};

/// The binary with `home` as its state dir and no gateway URL from the environment.
fn client(home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--state-dir")
        .arg(home)
        .env_remove("SWITCHBOARD_URL")
        .env_remove("SWITCHBOARD_TOKEN")
        .output()
        .unwrap()
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn client_commands_find_the_gateway_of_their_state_dir_and_say_why_not() {
    let home = tempfile::tempdir().unwrap();
    // A gateway on a port of its own choosing: the clients of its state dir find it.
    let gateway = GatewayProcess::start(home.path());
    let recorded = std::fs::read_to_string(home.path().join("gateway-url")).unwrap();
    assert_eq!(recorded.trim(), gateway.url);
    let health = client(home.path(), &["call", "health"]);
    let (out, err) = text(&health);
    assert!(health.status.success(), "{out}{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["ok"], true);
    // An http:// URL is the same door.
    let http = gateway.url.replace("ws://", "http://");
    let listed = client(home.path(), &["sessions", "list", "--url", &http]);
    assert!(listed.status.success(), "{:?}", text(&listed));
    assert!(text(&listed).0.contains("agent:main:main"));
    // Anything else is explained.
    let odd = client(
        home.path(),
        &["call", "health", "--url", "ftp://127.0.0.1:1"],
    );
    let (_, err) = text(&odd);
    assert!(!odd.status.success());
    assert!(err.contains("ws://, wss://, http:// or https://"), "{err}");
    // A wrong token is not "is the gateway running?".
    let refused = client(home.path(), &["call", "health", "--token", "wrong"]);
    let (_, err) = text(&refused);
    assert!(!refused.status.success());
    assert!(
        err.contains("refused the token") && !err.contains("is the gateway running"),
        "{err}"
    );
    // Stopped, it forgets its URL; where nothing listens, the client asks whether it runs.
    assert!(gateway.terminate().success());
    assert!(!home.path().join("gateway-url").exists());
    let url = format!("ws://127.0.0.1:{}", closed_port());
    let down = client(home.path(), &["call", "health", "--url", &url]);
    let (_, err) = text(&down);
    assert!(!down.status.success());
    assert!(
        err.contains("is the gateway running?") && err.contains("switchboard gateway"),
        "{err}"
    );
}

/// The option and argument lines of a help text that say nothing: a description stands after
/// the flag on the same line, or on the next line (clap's long layout).
fn undescribed_options(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let mut undescribed = Vec::new();
    let mut in_list = false;
    for (i, line) in lines.iter().enumerate() {
        if line.ends_with(':') && !line.starts_with(' ') {
            in_list = matches!(*line, "Options:" | "Arguments:") || line.ends_with("options:");
            continue;
        }
        let item = line.trim_start();
        let indent = line.len() - item.len();
        if !in_list || item.is_empty() || indent > 6 {
            continue;
        }
        let same_line = item
            .find("  ")
            .is_some_and(|end| !item[end..].trim().is_empty());
        let next_line = lines.get(i + 1).is_some_and(|next| {
            let text = next.trim_start();
            next.len() - text.len() > indent && !text.is_empty() && !text.starts_with('-')
        });
        if !same_line && !next_line {
            undescribed.push(line.to_string());
        }
    }
    undescribed
}

#[test]
fn every_option_is_described_and_client_and_gateway_options_stand_apart() {
    let home = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 11] = [
        &["-h"],
        &["gateway", "-h"],
        &["call", "-h"],
        &["chat", "-h"],
        &["sessions", "list", "-h"],
        &["sessions", "history", "-h"],
        &["sessions", "send", "-h"],
        &["sessions", "spawn", "-h"],
        &["sessions", "patch", "-h"],
        &["sessions", "delete", "-h"],
        &["mcp", "-h"],
    ];
    for args in commands {
        let output = client(home.path(), args);
        let (help, _) = text(&output);
        assert!(output.status.success(), "{args:?}");
        assert_eq!(
            undescribed_options(&help),
            Vec::<String>::new(),
            "{args:?}:\n{help}"
        );
    }
    let (gateway, _) = text(&client(home.path(), &["gateway", "-h"]));
    let gateway_part = gateway.split("Client options").next().unwrap();
    assert!(
        gateway.contains("Gateway options:") && gateway_part.contains("--port"),
        "{gateway}"
    );
    let (call, _) = text(&client(home.path(), &["call", "-h"]));
    let client_part = call.split("Client options:").nth(1).unwrap_or_default();
    assert!(
        client_part.contains("--url") && client_part.contains("--token"),
        "{call}"
    );
}

#[tokio::test]
async fn logs_off_a_terminal_carry_no_colour_codes() {
    let home = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let env = [("SWITCHBOARD_LOG", "info")];
    let (gateway, reader) = GatewayProcess::start_logging(home.path(), &env, log.clone());
    // Ready means its signal handlers are in place too.
    until(async || log.lock().unwrap().contains("gateway ready").then_some(())).await;
    assert!(gateway.terminate().success());
    reader.join().unwrap();
    let log = log.lock().unwrap().clone();
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a piped log:\n{log:?}"
    );
}

/// `switchboard chat` on `home`, its stdin ours, its stderr read line by line into `said`.
fn chat(home: &Path, said: Arc<Mutex<String>>) -> std::process::Child {
    let mut child = Command::new(BIN)
        .args(["chat", "--state-dir"])
        .arg(home)
        .env_remove("SWITCHBOARD_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let said = said.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                said.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
    }
    child
}

/// `chat.history` of main, through the binary.
fn main_history(home: &Path) -> Value {
    let params = r#"{"sessionKey":"main"}"#;
    let output = client(home, &["call", "chat.history", "--params", params]);
    serde_json::from_str(&text(&output).0).unwrap()
}

fn said_contains(said: &Arc<Mutex<String>>, needle: &str) -> Option<()> {
    said.lock().unwrap().contains(needle).then_some(())
}

#[tokio::test]
async fn chat_survives_a_refused_message_and_ctrl_c_aborts_the_run_it_waits_on() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let patch = client(
        home.path(),
        &["sessions", "patch", "main", "--send-policy", "deny"],
    );
    assert!(patch.status.success(), "{:?}", text(&patch));
    let said = Arc::new(Mutex::new(String::new()));
    let mut child = chat(home.path(), said.clone());
    let mut stdin = child.stdin.take().unwrap();
    // Refused by the send policy: said, and the chat goes on.
    writeln!(stdin, "hello?").unwrap();
    until(async || said_contains(&said, "[refused: send blocked by session policy")).await;
    writeln!(stdin, "/send on").unwrap();
    until(async || said_contains(&said, "Send policy for agent:main:main: allow.")).await;
    writeln!(stdin, "@reply pong").unwrap();
    until(async || said_contains(&said, "pong")).await;
    // A run that would take a minute: Ctrl-C aborts it, and the chat is still there.
    writeln!(stdin, "@delay 60000").unwrap();
    until(async || {
        let history = main_history(home.path()).to_string();
        history.contains("@delay 60000").then_some(())
    })
    .await;
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    until(async || said_contains(&said, "[aborted the run")).await;
    writeln!(stdin, "@reply still here").unwrap();
    until(async || said_contains(&said, "still here")).await;
    // Ctrl-C at the prompt leaves, though stdin stays open (no Enter needed).
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let left = until(async || child.try_wait().unwrap()).await;
    assert!(left.success(), "{}", said.lock().unwrap());
    drop(stdin);
    let messages = main_history(home.path());
    let aborted = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["stopReason"] == "aborted");
    assert!(aborted, "{messages}");
    gateway.stop();
}

#[test]
fn config_check_lists_every_problem_in_file_order_with_a_did_you_mean() {
    let home = tempfile::tempdir().unwrap();
    let check = |text: &str| {
        std::fs::write(home.path().join("config.json5"), text).unwrap();
        let output = client(home.path(), &["config", "check"]);
        assert!(!output.status.success(), "{text}");
        text_of_lines(&output.stderr)
    };
    // An unknown key is listed even though a value is bad too; the file's order, with lines.
    let lines = check(
        "{\n  gateway: { bnd: \"lan\" },\n  agents: { defaults: { timeoutSeconds: 0 } },\n  sesion: {},\n}\n",
    );
    assert_eq!(
        lines[..3],
        [
            "line 2: config error at gateway.bnd: unknown setting; did you mean `bind`?",
            "line 3: config error at agents.defaults.timeoutSeconds: 0 is not allowed; expected an integer 1–86400",
            "line 4: config error at sesion: unknown setting; did you mean `session`?",
        ]
    );
    // A missing comma is reported where it belongs: the end of line 4.
    let lines = check("{\n  gateway: {\n    port: 18790,\n  }\n  agents: {},\n}\n");
    assert!(
        lines[0].contains("at line 4, column 4: a comma is missing here"),
        "{lines:?}"
    );
}

fn text_of_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn chat_goes_on_across_a_gateway_restart_and_prints_reports_that_arrive_later() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let said = Arc::new(Mutex::new(String::new()));
    let mut child = chat(home.path(), said.clone());
    let mut stdin = child.stdin.take().unwrap();
    // A reply that takes a while: the gateway dies while it is being written.
    writeln!(stdin, "@delay 3000").unwrap();
    until(async || {
        let history = main_history(home.path()).to_string();
        history.contains("@delay 3000").then_some(())
    })
    .await;
    gateway.kill_9();
    // A line typed while the gateway is away is kept, and sent once it is back.
    writeln!(stdin, "@reply typed while away").unwrap();
    let gateway = GatewayProcess::start(home.path());
    until(async || said_contains(&said, "[connected again]")).await;
    // The cut-off run was resumed: its reply is printed, then the kept line's.
    until(async || said_contains(&said, "I am the scripted model")).await;
    until(async || said_contains(&said, "typed while away")).await;
    let history = main_history(home.path()).to_string();
    assert_eq!(
        history.matches("@reply typed while away").count(),
        1,
        "{history}"
    );
    // A sub-agent's report arrives later, while the prompt waits: it is printed.
    writeln!(
        stdin,
        r#"@tool sessions_spawn {{"task": "@reply the child is done"}}"#
    )
    .unwrap();
    until(async || said_contains(&said, "[subagent-announce]")).await;
    until(async || said_contains(&said, "Status: success")).await;
    // A report that arrives while a reply streams (the child answers after 1 s, the reply takes
    // about 7 s) is printed after that reply: neither lost nor written into its middle.
    writeln!(
        stdin,
        r#"@tool sessions_spawn {{"task": "@delay 1000\n@reply the second child is done"}}"#
    )
    .unwrap();
    writeln!(stdin, "@slow 300").unwrap();
    let reports = || said.lock().unwrap().matches("[subagent-announce]").count();
    until(async || (reports() == 2).then_some(())).await;
    let text = said.lock().unwrap().clone();
    let reply = text.rfind("I am the scripted model").unwrap();
    let report = text.rfind("[subagent-announce]").unwrap();
    assert!(
        reply < report && text[reply..report].contains("You said:"),
        "{text}"
    );
    drop(stdin);
    let left = until(async || child.try_wait().unwrap()).await;
    assert!(left.success(), "{}", said.lock().unwrap());
    gateway.stop();
}
