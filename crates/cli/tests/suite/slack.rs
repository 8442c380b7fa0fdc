//! The Slack channel through the gateway binary, against the test kit's fake Slack: a `kill -9`
//! between receiving a message and replying to it — after the message was committed and its
//! acknowledgement sent, but lost on the way, so that Slack delivers it again — ends in exactly
//! one reply and one run.

use std::path::Path;
use std::time::Duration;

use switchboard_testkit::FakeSlack;
use switchboard_testkit::slack::Posted;

use super::process::GatewayProcess;

const BOT_TOKEN: &str = "xoxb-cli-test";
const APP_TOKEN: &str = "xapp-cli-test";
/// How long a step may take before the test fails (a bound, not a timing).
const BOUND: Duration = Duration::from_secs(60);

fn write_config(home: &Path, fake: &FakeSlack) {
    let config = format!(
        r#"{{ channels: {{ slack: {{ enabled: true, botToken: "{BOT_TOKEN}", appToken: "{APP_TOKEN}",
                                  apiBase: "{}", dmPolicy: "open" }} }} }}"#,
        fake.api_base()
    );
    std::fs::write(home.join("config.json5"), config).unwrap();
}

async fn saw(fake: &FakeSlack, what: &str, check: impl FnMut(&FakeSlack) -> bool) {
    tokio::time::timeout(BOUND, fake.wait_for(check))
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_model_streams_ends_in_one_reply_to_each_message() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake);
    let gateway = GatewayProcess::start(home.path());
    // The first message holds the session; the second is received and queued behind it.
    fake.dm("U42", "@slow 1500\n@reply answered after the kill");
    saw(&fake, "the first message was committed", |f| {
        f.envelopes() == (1, 1)
    })
    .await;
    fake.lose_acks(true);
    fake.dm("U42", "@reply exactly-once");
    saw(
        &fake,
        "the second message was committed and acknowledged",
        |f| f.acked().len() == 2,
    )
    .await;
    gateway.kill_9();
    fake.lose_acks(false);

    // The new process's connection gets the second envelope again (its acknowledgement never
    // arrived): it is acknowledged, and its queued run resumes and replies once.
    let gateway = GatewayProcess::start(home.path());
    saw(&fake, "the redelivered envelope was acknowledged", |f| {
        f.envelopes() == (2, 2)
    })
    .await;
    // A later message in the same session: a second run of the second one would be answered
    // before it.
    fake.dm("U42", "@reply after");
    saw(&fake, "the bot replied", |f| f.sent().len() >= 3).await;
    let (asked, history) =
        super::process::times_asked(home.path(), &gateway.url, "main", "@reply exactly-once");
    assert_eq!(asked, 1, "the second message ran once: {history}");
    let sent: Vec<Posted> = fake.sent();
    let texts: Vec<&str> = sent.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        texts,
        ["answered after the kill", "exactly-once", "after"],
        "the cut-off run resumed and the queued one ran: each replied once"
    );
    gateway.stop();
    fake.stop().await;
}
