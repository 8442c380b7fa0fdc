//! `switchboard doctor` on every chat platform's credentials: against the test kit's fakes of
//! Discord, Slack, WhatsApp and the Signal daemon (each speaking its platform's refusal), a
//! webhook account's reply URL, and a
//! real Synapse for Matrix. A wrong credential is named with the setting that fixes it, a right
//! one passes with the identity the platform answered, and no token is printed.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use switchboard_testkit::discord::{BOT_USERNAME, FakeDiscord};
use switchboard_testkit::signal::FakeSignal;
use switchboard_testkit::slack::FakeSlack;
use switchboard_testkit::synapse;
use switchboard_testkit::whatsapp::{DISPLAY_NUMBER, FakeWhatsApp, PHONE_NUMBER_ID};

use super::process::BIN;

/// A state dir of mode 0700 holding `config`.
fn state_with(config: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let state = tempfile::tempdir().unwrap();
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(state.path().join("config.json5"), config).unwrap();
    state
}

/// `switchboard doctor --json` on `state`, off the test's runtime (the fakes run on it).
async fn doctor(state: &Path) -> (Output, Value) {
    let state = state.to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(["doctor", "--json", "--state-dir"])
            .arg(&state)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    (output, report)
}

/// The check named `what`: (ok, found, fix).
fn check(report: &Value, what: &str) -> (bool, String, String) {
    let all = report["checks"].as_array().unwrap();
    let c = all.iter().find(|c| c["what"] == what);
    let c = c.unwrap_or_else(|| panic!("no check {what:?} in {report}"));
    let text = |k: &str| c[k].as_str().unwrap_or("").to_string();
    (c["ok"] == true, text("found"), text("fix"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_each_refused_credential_with_its_setting_and_passes_the_right_ones() {
    let discord = FakeDiscord::start("discord-right").await;
    let slack = FakeSlack::start("xoxb-right", "xapp-right").await;
    let whatsapp = FakeWhatsApp::start("graph-right").await;
    let signal = FakeSignal::start().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    // A second Discord bot, `ops`, with a token the platform refuses (mended, it is removed: one
    // bot's token may not serve two accounts).
    let config = |discord_ops: Option<&str>, slack_bot: &str, graph: &str, daemon: &str| {
        let ops = discord_ops.map_or(String::new(), |t| format!("ops: {{ botToken: \"{t}\" }}"));
        format!(
            r#"{{ channels: {{
  discord: {{ enabled: true, botToken: "discord-right", apiBase: "{}",
             accounts: {{ {ops} }} }},
  slack: {{ enabled: true, botToken: "{slack_bot}", appToken: "xapp-right", apiBase: "{}" }},
  whatsapp: {{ enabled: true, accessToken: "{graph}", appSecret: "s", verifyToken: "v",
              phoneNumberId: "{PHONE_NUMBER_ID}", apiBase: "{}" }},
  signal: {{ enabled: true, account: "+15550002222", httpUrl: "{daemon}" }},
  webhook: {{ enabled: true, accounts: {{ crm: {{ token: "t", url: "{daemon}/hook?key=secret-key" }} }} }},
}} }}"#,
            discord.api_base(),
            slack.api_base(),
            whatsapp.api_base()
        )
    };
    let wrong = config(
        Some("discord-wrong"),
        "xoxb-wrong",
        "graph-wrong",
        &closed_url,
    );
    let state = state_with(&wrong);
    let (output, report) = doctor(state.path()).await;
    assert!(!output.status.success(), "{report}");
    for (what, found, fix) in [
        (
            "discord ops",
            "Discord refused the bot token (401 Unauthorized)",
            "set channels.discord.accounts.ops.botToken to the bot's token",
        ),
        (
            "slack default (botToken)",
            "Slack refused the bot token (invalid_auth, HTTP 200)",
            "set channels.slack.botToken to the app's Bot User OAuth Token",
        ),
        (
            "whatsapp default",
            "the Graph API refused the access token or the number (Invalid OAuth access token.",
            "set channels.whatsapp.accessToken to a system user's token",
        ),
        (
            "signal default",
            "is unreachable",
            "check channels.signal.httpUrl, and that this machine reaches it",
        ),
        (
            "webhook crm",
            "is unreachable",
            "check channels.webhook.accounts.crm.url, and that this machine reaches it",
        ),
    ] {
        let (ok, got, told) = check(&report, what);
        assert!(
            !ok && got.contains(found) && told.starts_with(fix),
            "{what}: {got} / {told}"
        );
    }
    // The right ones among them pass, each with the identity its platform answered.
    let (ok, found, _) = check(&report, "discord default");
    assert!(ok && found.contains(BOT_USERNAME), "{found}");
    let (ok, found, _) = check(&report, "slack default (appToken)");
    assert!(ok && found.contains("Socket Mode"), "{found}");
    let shown = String::from_utf8_lossy(&output.stdout);
    for token in [
        "discord-wrong",
        "discord-right",
        "xoxb-wrong",
        "xapp-right",
        "graph-wrong",
        "secret-key",
    ] {
        assert!(
            !shown.contains(token),
            "a token ({token}) is printed: {shown}"
        );
    }

    // Mended, every check passes.
    let right = config(None, "xoxb-right", "graph-right", &signal.http_url());
    std::fs::write(state.path().join("config.json5"), right).unwrap();
    let (output, report) = doctor(state.path()).await;
    assert!(output.status.success() && report["ok"] == true, "{report}");
    let (_, found, _) = check(&report, "whatsapp default");
    assert!(found.contains(DISPLAY_NUMBER), "{found}");
    let (_, found, _) = check(&report, "slack default (botToken)");
    assert!(
        found.contains("switchboard") && found.contains("Fake"),
        "{found}"
    );
    let (_, found, _) = check(&report, "signal default");
    assert_eq!(found, "the signal-cli daemon answers");
    // The fake daemon has no /hook: any HTTP answer says replies can be posted there.
    let (_, found, _) = check(&report, "webhook crm");
    assert_eq!(found, "the reply URL answers (HTTP 404)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_asks_a_real_homeserver_whose_the_matrix_token_is() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let hs = match tokio::task::block_in_place(|| synapse::shared(tmp)) {
        Ok(hs) => hs,
        Err(missing) => return synapse::not_run("doctor_asks_a_real_homeserver", &missing),
    };
    let bot = hs.register("doctorbot").await;
    let config = |credential: &str| {
        format!(
            r#"{{ channels: {{ matrix: {{ enabled: true, homeserver: "{}", userId: "{}", {credential} }} }} }}"#,
            hs.url, bot.user_id
        )
    };
    let state = state_with(&config(&format!("accessToken: \"{}\"", bot.access_token)));
    let (output, report) = doctor(state.path()).await;
    let (ok, found, _) = check(&report, "matrix default");
    assert!(output.status.success() && ok, "{report}");
    assert_eq!(found, format!("the access token is {}'s", bot.user_id));

    let wrong = config("accessToken: \"syt_not_a_token\"");
    std::fs::write(state.path().join("config.json5"), wrong).unwrap();
    let (output, report) = doctor(state.path()).await;
    let (ok, found, fix) = check(&report, "matrix default");
    assert!(!output.status.success() && !ok, "{report}");
    assert!(found.contains("M_UNKNOWN_TOKEN, HTTP 401"), "{found}");
    assert!(fix.starts_with("set channels.matrix.accessToken"), "{fix}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("syt_not_a_token"));

    // A password login is not tried (it would make a device): the homeserver is asked to answer.
    let password = config("password: \"hunter2\"");
    std::fs::write(state.path().join("config.json5"), password).unwrap();
    let (output, report) = doctor(state.path()).await;
    let (ok, found, _) = check(&report, "matrix default");
    assert!(output.status.success() && ok, "{report}");
    assert!(found.starts_with("the homeserver answers"), "{found}");
}
