//! Our own CLI's small print (issue 35, point 4): advice in the flags of the command that gave
//! it, table cells cut between words, exit codes that say how a run ended.

use std::process::Output;

use super::process::{GatewayProcess, run};

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_refused_send_to_ones_own_session_advises_the_cli_flag() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let sent = run(
        home.path(),
        &gateway.url,
        &["sessions", "send", "main", "hi"],
    );
    let (out, err) = text(&sent);
    assert!(!sent.status.success(), "{out}{err}");
    assert!(err.contains("send with --timeout 0"), "{err}");
    assert!(!err.contains("timeoutSeconds"), "{err}");
    gateway.stop();
}
