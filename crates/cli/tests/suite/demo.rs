//! `switchboard demo` runs the real binary to the end: exit 0, every step's marker in its account,
//! and its temporary state dir removed.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::process::BIN;

#[test]
fn the_demo_shows_every_session_tool_and_exits_0() {
    let mut child = Command::new(BIN)
        .arg("demo")
        .env("SWITCHBOARD_LOG", "warn")
        .env_remove("SWITCHBOARD_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    // A hang guard, not a timing: the demo takes well under a second.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("switchboard demo did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader.join().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{out}\n{err}");

    let markers = [
        // set-up, then the list
        "[1/4] sessions_list",
        "→ tools.invoke as main: sessions_list {}",
        "← count 3",
        "agent:main:discord:group:dev kind group  channel discord",
        "agent:research:main          kind main",
        // a history
        "[2/4] sessions_history",
        "#1 user: [from ana] Is the 14:02 deploy done?",
        "#2 assistant: Yes: deployed at 14:02, all checks green.",
        // a send, its reply, the reply-back turns and the announce step
        "[3/4] sessions_send",
        "← status ok",
        "reply: research here. On \"Is the 14:02 deploy done?\"",
        "#3 user (from agent:main:main): Thanks, research: noted.",
        "#4 assistant: REPLY_SKIP",
        "assistant: Announcement: main asked about the 14:02 deploy",
        // a spawn, accepted, and its report in main
        "[4/4] sessions_spawn",
        "← status accepted (at once)",
        "childSessionKey agent:research:subagent:",
        "Status: success\n      Result: 14:02 deploy shipped",
        "Notes: written by a scripted agent",
        "Stats: runtime ",
        "Demo done in ",
    ];
    for marker in markers {
        assert!(out.contains(marker), "missing {marker:?} in:\n{out}");
    }
    // It says where its state was, and removed it.
    let state = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("state "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap();
    assert!(out.contains(&format!("state dir {state} removed")), "{out}");
    assert!(!std::path::Path::new(state).exists(), "{state} still there");
}

#[test]
fn the_demo_runs_in_the_state_dir_named_and_keeps_it_and_refuses_a_used_one() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("demo-state");
    let demo = |dir: &std::path::Path| {
        Command::new(BIN)
            .args(["demo", "--state-dir"])
            .arg(dir)
            .env("SWITCHBOARD_LOG", "warn")
            .output()
            .unwrap()
    };
    let output = demo(&dir);
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{out}");
    assert!(
        out.contains(&format!("state dir kept at {}", dir.display())),
        "{out}"
    );
    assert!(std::fs::read_dir(&dir).unwrap().next().is_some());
    // Run again there, it would mix into what the first run left: refused, and nothing removed.
    let again = demo(&dir);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success());
    assert!(err.contains("needs a new or empty directory"), "{err}");
    assert!(std::fs::read_dir(&dir).unwrap().next().is_some());
}

#[test]
fn the_demo_uses_a_temporary_state_dir_whatever_switchboard_home_says() {
    // A real gateway's state dir, with files in it: the demo neither refuses nor touches it.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.json5"), "{}").unwrap();
    let output = Command::new(BIN)
        .arg("demo")
        .env("SWITCHBOARD_LOG", "warn")
        .env("SWITCHBOARD_HOME", home.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{out}\n{err}");
    assert!(out.contains("removed (--keep keeps it)"), "{out}");
    let home_shown = format!("state    {} ", home.path().display());
    assert!(!out.contains(&home_shown), "{out}");
    let left: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["config.json5"], "SWITCHBOARD_HOME untouched");
}
