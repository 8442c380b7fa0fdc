//! `switchboard doctor`'s chat-bot checks: each configured bot's credentials, proved by the
//! cheapest call its platform answers with the bot's own identity. Telegram `getMe`, Discord
//! `GET /users/@me`, Slack `auth.test` (and `apps.connections.open` for the app-level token),
//! WhatsApp the number's node, Matrix `whoami` (for a password login, the homeserver's
//! `versions`: logging in would make a device), the Signal daemon's `check`, and a webhook
//! account's reply URL. Nothing is sent to anyone, and no token is printed.

use serde_json::Value;
use switchboard_core::config::{BotConfig, Config, DEFAULT_ACCOUNT, Platform};

use crate::doctor::{Check, reqwest_reason};

/// How an answer reads: the bot's identity, or what the platform said instead.
type Read = fn(u16, &Value) -> Result<String, String>;

/// One credential's check.
struct Probe {
    /// `discord default`.
    what: String,
    /// The base the request went to, named when it cannot be reached.
    base: String,
    /// The setting that names that base (`channels.discord.apiBase`).
    base_setting: String,
    request: reqwest::RequestBuilder,
    read: Read,
    /// What to do when the credential is refused.
    fix: String,
}

impl Probe {
    /// A check of `bot`'s credential, whose request goes to `base`, named by its setting
    /// `base_field`.
    fn of<P: Platform>(
        bot: &BotConfig<P>,
        (base, base_field): (&str, &str),
        request: reqwest::RequestBuilder,
        read: Read,
        fix: String,
    ) -> Self {
        Self {
            what: what(bot),
            base: base.to_string(),
            base_setting: setting(bot, base_field),
            request,
            read,
            fix,
        }
    }

    async fn run(self) -> Check {
        match self.request.send().await {
            Err(e) => Check::failed(
                self.what,
                format!("{} is unreachable ({})", self.base, reqwest_reason(&e)),
                format!(
                    "check {}, and that this machine reaches it",
                    self.base_setting
                ),
            ),
            Ok(answer) => {
                let status = answer.status().as_u16();
                let body: Value = answer.json().await.unwrap_or_default();
                match (self.read)(status, &body) {
                    Ok(found) => Check::ok(self.what, found),
                    Err(found) => Check::failed(self.what, found, self.fix),
                }
            }
        }
    }
}

/// The path of one of `bot`'s settings, as the config file spells it.
fn setting<P: Platform>(bot: &BotConfig<P>, field: &str) -> String {
    match bot.id.as_str() {
        DEFAULT_ACCOUNT => format!("channels.{}.{field}", P::NAME),
        id => format!("channels.{}.accounts.{id}.{field}", P::NAME),
    }
}

fn what<P: Platform>(bot: &BotConfig<P>) -> String {
    format!("{} {}", P::NAME, bot.id)
}

/// Every configured bot's credentials, platform by platform.
pub async fn checks(http: &reqwest::Client, config: &Config) -> Vec<Check> {
    let channels = &config.channels;
    let mut probes = Vec::new();
    for bot in channels.telegram.bots() {
        let p = &bot.platform;
        let (Some(token), Some(base)) = (&p.bot_token, &p.api_base) else {
            continue;
        };
        let url = format!("{}/bot{token}/getMe", base.trim_end_matches('/'));
        probes.push(Probe::of(
            &bot,
            (base, "apiBase"),
            http.post(url).json(&serde_json::json!({})),
            telegram,
            format!(
                "set {} to the token @BotFather gave (a revoked token must be replaced)",
                setting(&bot, "botToken")
            ),
        ));
    }
    for bot in channels.discord.bots() {
        let p = &bot.platform;
        let (Some(token), Some(base)) = (&p.bot_token, &p.api_base) else {
            continue;
        };
        let url = format!("{}/users/@me", base.trim_end_matches('/'));
        probes.push(Probe::of(
            &bot,
            (base, "apiBase"),
            http.get(url)
                .header("authorization", format!("Bot {token}")),
            discord,
            format!(
                "set {} to the bot's token (Developer Portal → Bot → Reset Token)",
                setting(&bot, "botToken")
            ),
        ));
    }
    slack(http, config, &mut probes);
    others(http, config, &mut probes);
    let mut checks = Vec::with_capacity(probes.len());
    for probe in probes {
        checks.push(probe.run().await);
    }
    checks
}

/// Slack's two tokens: the bot token answers `auth.test`, the app-level one opens Socket Mode
/// (a connection URL that expires unused).
fn slack(http: &reqwest::Client, config: &Config, probes: &mut Vec<Probe>) {
    for bot in config.channels.slack.bots() {
        let p = &bot.platform;
        let Some(base) = &p.api_base else { continue };
        let base_setting = setting(&bot, "apiBase");
        let calls = [
            (
                &p.bot_token,
                "auth.test",
                slack_bot as Read,
                "botToken",
                "the app's Bot User OAuth Token (xoxb-…)",
            ),
            (
                &p.app_token,
                "apps.connections.open",
                slack_app,
                "appToken",
                "an app-level token (xapp-…) with connections:write",
            ),
        ];
        for (token, method, read, field, wanted) in calls {
            let Some(token) = token else { continue };
            let url = format!("{}/{method}", base.trim_end_matches('/'));
            probes.push(Probe {
                what: format!("{} ({field})", what(&bot)),
                base: base.clone(),
                base_setting: base_setting.clone(),
                request: http.post(url).bearer_auth(token),
                read,
                fix: format!("set {} to {wanted}", setting(&bot, field)),
            });
        }
    }
}

/// WhatsApp's number, Matrix's homeserver, Signal's daemon and each webhook account's reply
/// URL (asked with a `GET`: any HTTP answer means replies can be posted there).
fn others(http: &reqwest::Client, config: &Config, probes: &mut Vec<Probe>) {
    let webhook = &config.channels.webhook;
    let accounts = webhook.accounts.iter().filter(|_| webhook.enabled);
    for (id, account) in accounts {
        let Some(url) = &account.url else { continue };
        // Only the origin is shown: the path or query may carry a secret.
        let origin = reqwest::Url::parse(url).map_or_else(
            |_| "the URL".to_string(),
            |u| u.origin().ascii_serialization(),
        );
        probes.push(Probe {
            what: format!("webhook {id}"),
            base: origin,
            base_setting: format!("channels.webhook.accounts.{id}.url"),
            request: http.get(url),
            read: |status, _| Ok(format!("the reply URL answers (HTTP {status})")),
            fix: String::new(),
        });
    }
    for bot in config.channels.whatsapp.bots() {
        let p = &bot.platform;
        let (Some(token), Some(number), Some(base)) =
            (&p.access_token, &p.phone_number_id, &p.api_base)
        else {
            continue;
        };
        let url = format!("{}/{number}", base.trim_end_matches('/'));
        probes.push(Probe::of(
            &bot,
            (base, "apiBase"),
            http.get(url).bearer_auth(token),
            whatsapp,
            format!(
                "set {} to a system user's token with whatsapp_business_messaging, for the number {} names",
                setting(&bot, "accessToken"),
                setting(&bot, "phoneNumberId")
            ),
        ));
    }
    for bot in config.channels.matrix.bots() {
        let p = &bot.platform;
        let Some(base) = &p.homeserver else { continue };
        let root = base.trim_end_matches('/');
        let (request, read, fix): (_, Read, _) = match &p.access_token {
            Some(token) => (
                http.get(format!("{root}/_matrix/client/v3/account/whoami"))
                    .bearer_auth(token),
                matrix_token,
                format!(
                    "set {} to a token of the bot's user (or remove it and set {})",
                    setting(&bot, "accessToken"),
                    setting(&bot, "password")
                ),
            ),
            None => (
                http.get(format!("{root}/_matrix/client/versions")),
                matrix_versions,
                format!("check {}", setting(&bot, "homeserver")),
            ),
        };
        probes.push(Probe::of(&bot, (base, "homeserver"), request, read, fix));
    }
    for bot in config.channels.signal.bots() {
        let Some(base) = &bot.platform.http_url else {
            continue;
        };
        let url = format!("{}/api/v1/check", base.trim_end_matches('/'));
        probes.push(Probe::of(
            &bot,
            (base, "httpUrl"),
            http.get(url),
            signal,
            format!(
                "run `signal-cli -a <account> daemon --http <host:port>` where {} points",
                setting(&bot, "httpUrl")
            ),
        ));
    }
}

fn telegram(status: u16, body: &Value) -> Result<String, String> {
    match status {
        200 => Ok(format!(
            "the token is @{}'s",
            body["result"]["username"].as_str().unwrap_or("?")
        )),
        401 => Err("Telegram refused the bot token (401 Unauthorized)".into()),
        n => Err(format!("getMe answered HTTP {n}")),
    }
}

fn discord(status: u16, body: &Value) -> Result<String, String> {
    match status {
        200 => Ok(format!(
            "the token is {}'s (user {})",
            body["username"].as_str().unwrap_or("?"),
            body["id"].as_str().unwrap_or("?")
        )),
        401 => Err("Discord refused the bot token (401 Unauthorized)".into()),
        n => Err(format!("GET /users/@me answered HTTP {n}")),
    }
}

/// Slack answers HTTP 200 with `{"ok": false, "error"}` for a refused token.
fn slack_refusal(status: u16, body: &Value, token: &str) -> Option<String> {
    match body["ok"].as_bool() {
        Some(true) if status == 200 => None,
        _ => Some(format!(
            "Slack refused the {token} ({}, HTTP {status})",
            body["error"].as_str().unwrap_or("no answer")
        )),
    }
}

fn slack_bot(status: u16, body: &Value) -> Result<String, String> {
    match slack_refusal(status, body, "bot token") {
        Some(refused) => Err(refused),
        None => Ok(format!(
            "the bot token is {}'s in {}",
            body["user"].as_str().unwrap_or("?"),
            body["team"].as_str().unwrap_or("?")
        )),
    }
}

fn slack_app(status: u16, body: &Value) -> Result<String, String> {
    match slack_refusal(status, body, "app-level token") {
        Some(refused) => Err(refused),
        None => Ok("the app-level token opens Socket Mode".into()),
    }
}

fn whatsapp(status: u16, body: &Value) -> Result<String, String> {
    match status {
        200 => Ok(format!(
            "the token reaches the number {}",
            body["display_phone_number"].as_str().unwrap_or("?")
        )),
        n => Err(format!(
            "the Graph API refused the access token or the number ({}, HTTP {n})",
            body["error"]["message"].as_str().unwrap_or("no message")
        )),
    }
}

fn matrix_token(status: u16, body: &Value) -> Result<String, String> {
    match (status, body["user_id"].as_str()) {
        (200, Some(user)) => Ok(format!("the access token is {user}'s")),
        (n, _) => Err(format!(
            "the homeserver refused the access token ({}, HTTP {n})",
            body["errcode"].as_str().unwrap_or("no errcode")
        )),
    }
}

fn matrix_versions(status: u16, body: &Value) -> Result<String, String> {
    match (status, body["versions"].is_array()) {
        (200, true) => {
            Ok("the homeserver answers; the password is tried when the gateway logs in".into())
        }
        (n, _) => Err(format!(
            "GET /_matrix/client/versions answered HTTP {n}, not a homeserver's answer"
        )),
    }
}

fn signal(status: u16, _: &Value) -> Result<String, String> {
    match status {
        200 => Ok("the signal-cli daemon answers".into()),
        n => Err(format!("the daemon's check answered HTTP {n}")),
    }
}
