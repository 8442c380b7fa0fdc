//! The config half of `switchboard import openclaw` (config/import.rs).

use pretty_assertions::assert_eq;

use super::*;

fn imported(files: &[(&str, &str)]) -> ImportedConfig {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    import_reference(&dir.path().join("openclaw.json")).unwrap()
}

#[test]
fn a_reference_config_is_carried_over_and_what_has_no_counterpart_is_listed() {
    let out = imported(&[(
        "openclaw.json",
        r#"{
  gateway: { mode: "local", bind: "loopback", port: 18789, auth: { mode: "token", token: "${GW_TOKEN}" } },
  update: { checkOnStart: false },
  agents: { defaults: { model: { primary: "mock/mock-model" }, heartbeat: { every: "0m" } } },
  models: { mode: "replace", providers: { mock: { baseUrl: "http://127.0.0.1:9/v1", apiKey: "k",
            api: "openai-completions", models: [{ id: "mock-model", contextWindow: 128000 }] } } },
  channels: { discord: { enabled: true, token: "${DISCORD_TOKEN}", historyLimit: 20 } },
  commands: { ownerAllowFrom: ["discord:123456789012345678"], native: "auto" },
}"#,
    )]);
    let value = &out.value;
    assert_eq!(value["gateway"]["port"], 18789);
    assert_eq!(
        value["gateway"]["auth"]["token"], "${GW_TOKEN}",
        "a reference stays a reference"
    );
    assert_eq!(value["channels"]["discord"]["botToken"], "${DISCORD_TOKEN}");
    assert_eq!(
        value["channels"]["discord"]["owners"][0],
        "123456789012345678"
    );
    assert!(value.get("commands").is_none(), "{value}");
    assert_eq!(
        value["agents"]["defaults"]["model"]["primary"],
        "mock/mock-model"
    );
    let paths: Vec<&str> = out.left_out.iter().map(|l| l.path.as_str()).collect();
    for expected in [
        "update",
        "channels.discord.historyLimit",
        "agents.defaults.heartbeat",
        "models.mode",
        "commands.native",
    ] {
        assert!(
            paths.contains(&expected),
            "{expected} not in {:#?}",
            out.left_out
        );
    }
    let env = |name: &str| name.ends_with("_TOKEN").then(|| "set".to_owned());
    let loaded = load_str(&value.to_string(), "imported", &env);
    assert!(loaded.is_ok(), "the result loads: {loaded:?}");
    assert_eq!(loaded.unwrap().unknown, Vec::<String>::new());
}

#[test]
fn includes_are_merged_with_the_siblings_over_them() {
    let out = imported(&[
        (
            "openclaw.json",
            r#"{ agents: { $include: ["./a.json5", "./b.json5"], defaults: { thinkingLevel: "low" } } }"#,
        ),
        (
            "a.json5",
            r#"{ list: [{ id: "main" }], defaults: { thinkingLevel: "high" } }"#,
        ),
        ("b.json5", r#"{ list: [{ id: "ops", default: true }] }"#),
    ]);
    assert_eq!(
        out.value["agents"]["list"][0]["id"], "ops",
        "a later file wins"
    );
    assert_eq!(
        out.value["agents"]["defaults"]["thinkingLevel"], "low",
        "siblings win"
    );
}

#[test]
fn a_channel_the_reference_ran_runs_here_or_is_turned_off_saying_what_to_add() {
    let out = imported(&[(
        "openclaw.json",
        r#"{ channels: { discord: { token: "t" }, whatsapp: { dmPolicy: "pairing" }, slack: { enabled: false } } }"#,
    )]);
    let channels = &out.value["channels"];
    assert_eq!(
        channels["discord"]["enabled"], true,
        "the reference ran it: so does this gateway"
    );
    assert_eq!(channels["slack"]["enabled"], false);
    assert_eq!(channels["whatsapp"]["enabled"], false);
    let said: Vec<String> = out
        .left_out
        .iter()
        .map(|l| format!("{}: {}", l.path, l.why))
        .collect();
    assert!(
        said.iter().any(|l| l.starts_with(
            "channels.whatsapp.enabled: turned off: channels.whatsapp.phoneNumberId: missing"
        )),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|l| l.starts_with("channels.whatsapp: WhatsApp Web pairing has no counterpart")),
        "{said:#?}"
    );
}
