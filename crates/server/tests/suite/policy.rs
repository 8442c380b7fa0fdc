//! Send policy at the gateway: rules, default, per-session override, `/send`.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::config::{Config, SendAction, SendPolicyMatch, SendPolicyRule};
use switchboard_protocol::ErrorCode;

use super::harness::TestGateway;

fn deny_discord_groups() -> Config {
    let mut config = Config::default();
    config.session.send_policy.rules = vec![SendPolicyRule {
        r#match: SendPolicyMatch {
            channel: Some("discord".into()),
            chat_type: Some(switchboard_core::config::ChatType::Group),
            key_prefix: None,
        },
        action: SendAction::Deny,
    }];
    config
}

#[tokio::test]
async fn a_deny_rule_blocks_chat_send_and_agent_and_send_overrides_it() {
    let gw = TestGateway::start_with(deny_discord_groups()).await;
    let mut client = gw.client().await;
    // A key with no session yet: channel and chat type come from the key.
    for method in ["chat.send", "agent"] {
        let res = client
            .request_frame(
                method,
                json!({"sessionKey": "discord:group:dev", "message": "@reply hi"}),
            )
            .await
            .unwrap();
        let error = res
            .error
            .unwrap_or_else(|| panic!("{method} was not refused"));
        assert_eq!(error.code, ErrorCode::Forbidden, "{method}");
        assert!(
            error.message.starts_with("send blocked by session policy"),
            "{}",
            error.message
        );
        assert!(
            error.message.contains("channel=discord"),
            "{}",
            error.message
        );
    }
    // Other sessions are not affected.
    let ok = client
        .request(
            "agent",
            json!({"sessionKey": "slack:group:dev", "message": "@reply fine"}),
        )
        .await
        .unwrap();
    assert_eq!(ok["reply"], "fine");

    // The owner's /send on overrides the rule for this session; the answer is a confirmation.
    let on = client
        .request(
            "chat.send",
            json!({"sessionKey": "discord:group:dev", "message": "/send on"}),
        )
        .await
        .unwrap();
    assert_eq!(
        (on["command"].clone(), on["sendPolicy"].clone()),
        (json!("/send"), json!("allow"))
    );
    assert_eq!(
        on["reply"],
        "Send policy for agent:main:discord:group:dev: allow."
    );
    let ok = client
        .request(
            "agent",
            json!({"sessionKey": "discord:group:dev", "message": "@reply now allowed"}),
        )
        .await
        .unwrap();
    assert_eq!(ok["reply"], "now allowed");
    // inherit goes back to the rule; off blocks even where the config allows.
    client
        .request(
            "chat.send",
            json!({"sessionKey": "discord:group:dev", "message": "/send inherit"}),
        )
        .await
        .unwrap();
    let blocked = client
        .request_frame(
            "chat.send",
            json!({"sessionKey": "discord:group:dev", "message": "x"}),
        )
        .await
        .unwrap();
    assert_eq!(blocked.error.unwrap().code, ErrorCode::Forbidden);
    client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "/send off"}),
        )
        .await
        .unwrap();
    let blocked = client
        .request_frame("chat.send", json!({"sessionKey": "main", "message": "x"}))
        .await
        .unwrap();
    assert!(
        blocked
            .error
            .unwrap()
            .message
            .contains("session override sendPolicy=deny")
    );
    let row = &client
        .request("sessions.list", json!({"kinds": ["main"]}))
        .await
        .unwrap()["sessions"][0];
    assert_eq!(row["sendPolicy"], "deny");

    let wrong = client
        .request_frame(
            "chat.send",
            json!({"sessionKey": "main", "message": "/send maybe"}),
        )
        .await
        .unwrap();
    let error = wrong.error.unwrap();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(
        error.message.contains("expected /send on|off|inherit"),
        "{}",
        error.message
    );
    // A message that merely starts with "/send" is not the command.
    client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "/send on"}),
        )
        .await
        .unwrap();
    let normal = client
        .request(
            "agent",
            json!({"sessionKey": "main", "message": "/sendfoo\n@reply plain"}),
        )
        .await
        .unwrap();
    assert_eq!(normal["reply"], "plain");
    gw.stop().await;
}

#[tokio::test]
async fn a_default_deny_blocks_everything_without_an_override() {
    let mut config = Config::default();
    config.session.send_policy.default = SendAction::Deny;
    let gw = TestGateway::start_with(config).await;
    let mut client = gw.client().await;
    let blocked = client
        .request_frame("chat.send", json!({"sessionKey": "main", "message": "x"}))
        .await
        .unwrap();
    assert!(blocked.error.unwrap().message.contains("(default deny)"));
    client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "/send allow"}),
        )
        .await
        .unwrap();
    let ok = client
        .request(
            "agent",
            json!({"sessionKey": "main", "message": "@reply yes"}),
        )
        .await
        .unwrap();
    assert_eq!(ok["reply"], "yes");
    gw.stop().await;
}
