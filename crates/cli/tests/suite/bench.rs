//! `switchboard bench` against a real gateway process and the floor, with tiny counts: every
//! workload has a row for both targets with operations and no errors, and the floor answered
//! every request sent to it. Structure and counts only, never timings.

use std::process::Command;

use serde_json::Value;

use super::process::{BIN, GatewayProcess};

const WORKLOADS: [&str; 7] = [
    "health",
    "sessions.list {limit:200}",
    "chat.history {limit:50}",
    "warm turn",
    "parallel turns",
    "sessions_send with wait",
    "spawn burst",
];

#[test]
fn bench_runs_every_workload_against_the_gateway_and_the_floor() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let out = home.path().join("bench.jsonl");
    let ours = format!(
        "ours={},token={},pid={}",
        gateway.url,
        gateway.token,
        gateway.child.id()
    );
    let output = Command::new(BIN)
        .args([
            "bench", "--target", &ours, "--target", "floor", "--rounds", "2",
        ])
        .args([
            "--calls",
            "3",
            "--turns",
            "2",
            "--parallel",
            "2",
            "--parallel-turns",
            "4",
        ])
        .args(["--sends", "1", "--spawns", "2", "--spawn-requesters", "2"])
        .args(["--spawn-timeout-s", "120", "--out"])
        .arg(&out)
        .env("SWITCHBOARD_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");

    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Two rounds × seven workloads × two targets.
    assert_eq!(lines.iter().filter(|l| l["round"].is_u64()).count(), 28);
    for workload in WORKLOADS {
        for target in ["ours", "floor"] {
            let summary = lines
                .iter()
                .find(|l| {
                    l["summary"] == true && l["workload"] == workload && l["target"] == target
                })
                .unwrap_or_else(|| panic!("no summary of {workload} on {target}: {lines:?}"));
            assert!(summary["ops"].as_u64().unwrap() > 0, "{summary}");
            assert_eq!(summary["errors"], 0, "{summary}");
            // Both targets' CPU is read from /proc.
            assert!(summary["cpuPerOpMs"].is_number(), "{summary}");
            assert!(summary["floorP50Ms"].is_number(), "{summary}");
            let row = format!("| {workload} | {target} | {} |", summary["ops"]);
            assert!(stdout.contains(&row), "no row {row:?} in\n{stdout}");
        }
    }
    // Every spawn block saw all its children announce (not the floor's: it announces nothing).
    let spawns = lines
        .iter()
        .filter(|l| l["round"].is_u64() && l["workload"] == "spawn burst" && l["target"] == "ours");
    for block in spawns {
        assert!(block["announcedMs"].is_number(), "{block}");
    }
    let floor = lines.iter().find(|l| l["floor"] == true).unwrap();
    assert!(floor["sent"].as_u64().unwrap() > 0, "{floor}");
    assert_eq!(floor["answered"], floor["sent"], "{floor}");
    gateway.stop();
}
