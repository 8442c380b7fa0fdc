//! The commands an operator reaches for first (issue 60): `health`, `status`, `logs`, `channels
//! status`, `usage` and `cron …`, each against a running gateway, read as a person reads them
//! and as a script does (`--json`, parsed); and one gateway per state dir.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::process::{BIN, GatewayProcess, run};

fn ok(output: &Output) -> String {
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{out}{err}");
    out
}

/// The command's `--json` output, parsed.
fn json(home: &Path, url: &str, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = ok(&run(home, url, &args));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {out}"))
}

fn text(home: &Path, url: &str, args: &[&str]) -> String {
    ok(&run(home, url, args))
}

#[test]
fn health_status_logs_channels_and_usage_read_the_running_gateway() {
    let home = tempfile::tempdir().unwrap();
    // A setting it does not know: the gateway starts, with a warning in its log.
    std::fs::write(
        home.path().join("config.json5"),
        "{ gateway: { colour: \"blue\" } }",
    )
    .unwrap();
    // At info, the default: the run's end is logged.
    let log = std::sync::Arc::default();
    let (gateway, _) =
        GatewayProcess::start_logging(home.path(), &[("SWITCHBOARD_LOG", "info")], log);
    let (home, url) = (home.path(), gateway.url.as_str());
    let turn = r#"{"sessionKey":"agent:main:ops","message":"hello","idempotencyKey":"ops-1"}"#;
    let sent: Value =
        serde_json::from_str(&text(home, url, &["call", "chat.send", "--params", turn])).unwrap();
    let wait = format!(r#"{{"runId":{},"timeoutMs":30000}}"#, sent["runId"]);
    text(home, url, &["call", "agent.wait", "--params", &wait]);

    let health = json(home, url, &["health"]);
    assert_eq!(health["ok"], true, "{health}");
    assert_eq!(health["queue"]["queuedRuns"], 0, "{health}");
    let shown = text(home, url, &["health"]);
    assert!(shown.starts_with("gateway   ok: switchboard "), "{shown}");
    assert!(shown.contains("store     sqlite, ok"), "{shown}");
    assert!(shown.contains("channels  none configured"), "{shown}");

    let status = json(home, url, &["status"]);
    assert_eq!(status["health"]["ok"], true, "{status}");
    assert!(
        status["status"]["sessions"]["count"].as_u64().unwrap() >= 2,
        "{status}"
    );
    let problems = status["recentProblems"].as_array().unwrap();
    let planted = |l: &Value| {
        l["message"]
            .as_str()
            .is_some_and(|m| m.contains("gateway.colour"))
    };
    assert!(problems.iter().any(planted), "{status}");
    let shown = text(home, url, &["status"]);
    for part in [
        "agents    main (default): ",
        "queue     0 running, 0 queued",
        "model     builtin/scripted",
        "problems  the last 1 warnings and errors:",
    ] {
        assert!(shown.contains(part), "{part:?} not in:\n{shown}");
    }

    // The log as JSON lines, each with its level; the run above is in it.
    let logs = text(home, url, &["logs", "-n", "500", "--json"]);
    let lines: Vec<Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().all(|l| l["level"].is_string()), "{logs}");
    let ended = |l: &Value| {
        l["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("run ended run_id=ops-1")
    };
    assert!(lines.iter().any(ended), "{logs}");
    // Followed, a new run's end shows up as it is logged. `-n 1` prints the newest line
    // first: once it is read, the follower's cursor is set and the next run comes after it.
    let mut follow = Command::new(BIN)
        .args(["logs", "--follow", "--json", "-n", "1", "--state-dir"])
        .arg(home)
        .env("SWITCHBOARD_URL", url)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut followed = BufReader::new(follow.stdout.take().unwrap()).lines();
    // Never a test that hangs: a minute on, the follower is stopped and its output ends.
    let pid = follow.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(60));
        let _ = Command::new("kill").arg(pid).status();
    });
    let newest: Value = serde_json::from_str(&followed.next().unwrap().unwrap()).unwrap();
    assert!(newest["level"].is_string(), "{newest}");
    let turn = turn.replace("ops-1", "ops-2");
    let sent = text(home, url, &["call", "chat.send", "--params", &turn]);
    assert!(sent.contains("\"ops-2\""), "{sent}");
    let mut seen = Vec::new();
    for line in followed.map_while(Result::ok) {
        let line: Value = serde_json::from_str(&line).unwrap();
        let message = line["message"].as_str().unwrap_or_default().to_string();
        seen.push(message.clone());
        if message.starts_with("run ended run_id=ops-2") {
            break;
        }
    }
    follow.kill().unwrap();
    follow.wait().unwrap();
    let ended = seen.iter().any(|m| m.starts_with("run ended run_id=ops-2"));
    assert!(ended, "{seen:?}");
    let warnings = text(home, url, &["logs", "--level", "warn"]);
    assert!(warnings.contains("gateway.colour"), "{warnings}");
    assert!(
        warnings
            .lines()
            .all(|l| l.contains(" WARN ") || l.contains("ERROR")),
        "{warnings}"
    );

    let channels = json(home, url, &["channels", "status"]);
    assert!(
        channels["channelOrder"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "telegram")
    );
    let shown = text(home, url, &["channels", "status"]);
    assert!(shown.starts_with("CHANNEL   ACCOUNT  STATE"), "{shown}");
    assert!(
        shown.contains("telegram  -        not configured  no"),
        "{shown}"
    );

    // The turn's tokens, by model and by agent.
    let by_model = json(home, url, &["usage", "--by", "model"]);
    let scripted = &by_model["byModel"]["builtin/scripted"];
    assert!(scripted["totalTokens"].as_u64().unwrap() > 0, "{by_model}");
    let by_agent = json(home, url, &["usage", "--by", "agent"]);
    assert_eq!(
        by_agent["byAgent"]["main"]["totals"], by_agent["totals"],
        "{by_agent}"
    );
    let shown = text(home, url, &["usage", "--by", "agent"]);
    assert!(
        shown.starts_with("AGENT  INPUT  OUTPUT  TOKENS  COST (USD)\nmain "),
        "{shown}"
    );
    gateway.stop();
}

#[test]
fn cron_jobs_are_added_fired_paused_and_removed_from_the_command_line() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let (home, url) = (home.path(), gateway.url.as_str());
    assert!(text(home, url, &["cron", "list"]).starts_with("No cron jobs."));
    let added = text(
        home,
        url,
        &[
            "cron",
            "add",
            "--id",
            "digest",
            "--every",
            "1h",
            "--message",
            "sum up",
        ],
    );
    assert_eq!(
        added.trim(),
        "added digest (every 1h), session agent:main:cron:digest"
    );
    let fired = text(home, url, &["cron", "run", "digest"]);
    assert!(fired.starts_with("digest fired: run "), "{fired}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let runs = loop {
        let runs = json(home, url, &["cron", "runs", "digest"]);
        // Listed `running` from its start (`cron run` answers once it is queued) until it ends.
        let ended = runs["entries"][0]["status"]
            .as_str()
            .is_some_and(|status| status != "running");
        if ended || Instant::now() > deadline {
            break runs;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(runs["entries"][0]["status"], "ok", "{runs}");
    let shown = text(home, url, &["cron", "runs", "digest"]);
    assert!(
        shown.starts_with("WHEN") && shown.contains(" ok "),
        "{shown}"
    );

    assert_eq!(
        text(home, url, &["cron", "disable", "digest"]).trim(),
        "digest disabled"
    );
    let listed = json(home, url, &["cron", "list"]);
    assert_eq!(listed["jobs"][0]["enabled"], false, "{listed}");
    let shown = text(home, url, &["cron", "list"]);
    assert!(shown.contains("digest  main   every 1h  no"), "{shown}");
    assert_eq!(
        text(home, url, &["cron", "enable", "digest"]).trim(),
        "digest enabled"
    );
    assert_eq!(
        json(home, url, &["cron", "list"])["jobs"][0]["enabled"],
        true
    );

    assert_eq!(
        text(home, url, &["cron", "rm", "digest"]).trim(),
        "digest removed"
    );
    assert_eq!(json(home, url, &["cron", "list"])["total"], 0);
    // A job that is not there is an error that names it.
    let missing = run(home, url, &["cron", "run", "digest"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("digest"));
    gateway.stop();
}

#[test]
fn a_second_gateway_on_the_same_state_dir_is_refused_and_told_which_one_holds_it() {
    let home = tempfile::tempdir().unwrap();
    let first = GatewayProcess::start(home.path());
    let second = Command::new(BIN)
        .args(["gateway", "--port", "0", "--state-dir"])
        .arg(home.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{err}");
    let pid = first.child.id();
    assert!(
        err.contains(&format!(
            "the state dir {} is in use by another gateway (pid {pid})",
            home.path().display()
        )) && err.contains(&format!("(`kill {pid}`)")),
        "{err}"
    );
    // Nor do the commands that write into its store run under it (the gateway's kept list
    // pages would never show their rows).
    let from = tempfile::tempdir().unwrap();
    let writers: [&[&str]; 2] = [
        &[
            "import",
            "openclaw",
            "--from",
            from.path().to_str().unwrap(),
        ],
        &["dev", "seed", "--sessions", "3"],
    ];
    for args in writers {
        let refused = Command::new(BIN)
            .arg("--state-dir")
            .arg(home.path())
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "which a running gateway (pid {pid}) serves: stop it first"
            )),
            "{args:?}: {err}"
        );
    }
    let listed = json(home.path(), &first.url, &["sessions", "list"]);
    assert_eq!(listed["count"], 1, "nothing was written: {listed}");
    // The first one serves on; once it is gone, the dir is free again.
    let health = json(home.path(), &first.url, &["health"]);
    assert_eq!(health["ok"], true);
    first.kill_9();
    let again = GatewayProcess::start(home.path());
    assert_eq!(json(home.path(), &again.url, &["health"])["ok"], true);
    again.stop();
}

#[test]
fn service_install_writes_a_unit_that_systemd_accepts() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("my state");
    let units = home.path().join("units");
    // Under sudo the unit's user may not be able to make its state dir (`/var/lib/…`): the
    // install makes it and gives it to them (as root here: to uid 1, `daemon`).
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let me = std::fs::metadata(home.path()).unwrap().uid();
    let owner = if me == 0 { 1 } else { me };
    let written = Command::new(BIN)
        .args(["service", "install", "--unit-dir"])
        .arg(&units)
        .arg("--state-dir")
        .arg(&state)
        .env("USER", "daemon")
        .env_remove("SUDO_USER")
        .env("SUDO_UID", owner.to_string())
        .env("SUDO_GID", owner.to_string())
        .output()
        .unwrap();
    let said = ok(&written);
    let path = units.join("switchboard.service");
    assert!(
        said.starts_with(&format!("wrote {}", path.display())),
        "{said}"
    );
    let made = std::fs::metadata(&state).unwrap();
    assert_eq!(
        (made.uid(), made.gid(), made.permissions().mode() & 0o777),
        (owner, owner, 0o700)
    );
    assert!(
        said.contains(&format!(
            "made the state dir {} (mode 0700) for uid {owner}",
            state.display()
        )),
        "{said}"
    );
    assert!(said.contains("systemctl daemon-reload && systemctl enable --now switchboard"));
    let unit = std::fs::read_to_string(&path).unwrap();
    let exec = format!(
        "ExecStart={BIN} --state-dir \"{}\" gateway\n",
        state.display()
    );
    for line in [
        exec.as_str(),
        "User=daemon\n",
        "Restart=on-failure\n",
        "TimeoutStopSec=25\n",
        "WantedBy=multi-user.target\n",
    ] {
        assert!(unit.contains(line), "{line:?} not in:\n{unit}");
    }
    // systemd's own check: it says nothing about a unit it accepts whole (a setting it does not
    // know or cannot parse is a warning there, not an exit status).
    let Ok(verified) = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
    else {
        switchboard_testkit::not_run(
            "service unit test NOT RUN: systemd-analyze is missing (Debian: apt-get install systemd)",
        );
        return;
    };
    let err = String::from_utf8_lossy(&verified.stderr);
    assert!(verified.status.success(), "{err}");
    let about_unit: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("switchboard.service"))
        .collect();
    assert!(
        about_unit.is_empty(),
        "systemd-analyze verify: {about_unit:?}"
    );
    // A user unit is wanted by the user's session, and runs as that user.
    let user = Command::new(BIN)
        .args(["service", "install", "--user", "--print", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let unit = ok(&user);
    assert!(
        unit.contains("WantedBy=default.target") && !unit.contains("User="),
        "{unit}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_a_wrong_token_an_unreachable_provider_and_an_open_state_dir() {
    use std::os::unix::fs::PermissionsExt;
    let fake = switchboard_testkit::telegram::FakeTelegram::start("123456:right-token").await;
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let config = format!(
        r#"{{
  models: {{ providers: {{ local: {{ api: "openai-completions", baseUrl: "http://127.0.0.1:{port}/v1",
                                   models: [{{ id: "m" }}] }} }} }},
  channels: {{ telegram: {{ enabled: true, botToken: "123456:wrong-token", apiBase: "{}" }} }},
}}"#,
        fake.api_base()
    );
    std::fs::write(state.join("config.json5"), config).unwrap();
    // Planted: the state dir readable by everyone, the provider's port closed, a wrong token.
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let shown = tokio::task::spawn_blocking({
        let state = state.clone();
        move || doctor(&state, false)
    })
    .await
    .unwrap();
    let out = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(!shown.status.success(), "{out}");
    for (found, fix) in [
        ("FAIL state dir: ", "fix: chmod 700 "),
        (
            "FAIL provider local: http://127.0.0.1:",
            "fix: check models.providers.local.baseUrl",
        ),
        (
            "FAIL telegram default: Telegram refused the bot token (401 Unauthorized)",
            "fix: set channels.telegram.botToken",
        ),
    ] {
        assert!(
            out.contains(found) && out.contains(fix),
            "{found:?} / {fix:?} not in:\n{out}"
        );
    }
    assert!(
        out.contains("is mode 0755") && out.contains("is unreachable"),
        "{out}"
    );
    assert!(
        out.contains("ok   config: ") && out.ends_with("3 problems to fix.\n"),
        "{out}"
    );
    assert!(
        !out.contains("wrong-token"),
        "no token in the output: {out}"
    );

    // Mended, the same checks pass; --json says the same, check by check.
    let mended = std::fs::read_to_string(state.join("config.json5"))
        .unwrap()
        .replace("wrong-token", "right-token")
        .replace(
            &format!("127.0.0.1:{port}/v1"),
            &format!("{}/v1", fake.api_base().trim_start_matches("http://")),
        );
    std::fs::write(state.join("config.json5"), mended).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let checked = tokio::task::spawn_blocking({
        let state = state.clone();
        move || doctor(&state, true)
    })
    .await
    .unwrap();
    let report: Value = serde_json::from_slice(&checked.stdout).unwrap();
    let failed: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] != true)
        .collect();
    assert!(failed.is_empty() && checked.status.success(), "{report}");
    let telegram = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "telegram default")
        .unwrap();
    assert!(
        telegram["found"]
            .as_str()
            .unwrap()
            .starts_with("the token is @"),
        "{telegram}"
    );
    fake.stop().await;
}

/// `switchboard doctor` on `state` (a blocking call: the fake platform runs on the test's runtime).
fn doctor(state: &Path, json: bool) -> Output {
    let mut command = Command::new(BIN);
    command.arg("doctor").arg("--state-dir").arg(state);
    if json {
        command.arg("--json");
    }
    command.output().unwrap()
}
