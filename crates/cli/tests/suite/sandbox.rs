//! The command sandbox (SPEC §6.5, docs/sandbox.md) through the real binary: a sandboxed
//! session's `exec` runs in the namespaces, Landlock and seccomp the gateway builds itself, as
//! the CI user does (root here: the sandbox then runs as `nobody`). Each escape is refused or
//! contained with a clear result, and the gateway goes on answering. A gateway whose kernel
//! (here: the sandbox it itself runs in) cannot build the sandbox refuses to start, naming the
//! piece.

use std::path::Path;

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;

use super::process::{BIN, GatewayProcess};

/// Every session of `main` is sandboxed and may run commands, with small limits.
const CONFIG: &str = r#"{
  tools: { profile: "coding" },
  agents: { defaults: { sandbox: { mode: "all",
    limits: { cpuSeconds: 20, memoryMb: 512, processes: 64, fileSizeMb: 16 } } } },
}"#;

async fn exec(client: &mut GatewayClient, args: Value) -> Value {
    let answer = client
        .request(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "exec", "args": args}),
        )
        .await
        .unwrap();
    answer["result"].clone()
}

fn output(result: &Value) -> &str {
    result["output"].as_str().unwrap_or_default()
}

/// Why this machine's kernel cannot build the sandbox at all (no Landlock, no user
/// namespaces), if it cannot: the helper's own refusal, naming the piece.
fn kernel_lacks(home: &Path) -> Option<String> {
    // A folder of its own: the sandbox gives its workspace to the sandbox user.
    let root = home.join("probe");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let spec = json!({
        "workspace": root, "cwd": root, "network": false, "uid": 65534,
        "readOnly": ["/usr", "/bin", "/lib", "/lib64", "/etc"],
        "limits": {"cpuSeconds": 10, "memoryBytes": 1u64 << 30, "processes": 64,
                   "fileSizeBytes": 1u64 << 20, "openFiles": 256},
    });
    let ran = std::process::Command::new(BIN)
        .args(["__sandbox", &spec.to_string(), "true"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stderr).into_owned();
    let kernel =
        said.contains("Landlock") || said.contains("namespaces") || said.contains("seccomp");
    (ran.status.code() == Some(125) && kernel).then_some(said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_escape_from_the_sandbox_is_refused_or_contained_and_the_gateway_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let probe = tempfile::tempdir().unwrap();
    if let Some(why) = kernel_lacks(probe.path()) {
        let test = "every_escape_from_the_sandbox_is_refused_or_contained_and_the_gateway_goes_on";
        eprintln!("sandbox test {test} NOT RUN: this kernel cannot build the sandbox: {why}");
        return;
    }
    std::fs::write(home.path().join("config.json5"), CONFIG).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let state = home.path().display().to_string();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();

    let inside = exec(
        &mut client,
        json!({"command": "id -u; hostname; echo $$; echo made > mine.txt; cat mine.txt"}),
    )
    .await;
    assert_eq!(
        (&inside["status"], &inside["exitCode"]),
        (&json!("exited"), &json!(0)),
        "{inside}"
    );
    assert_eq!(
        output(&inside),
        "0\nsandbox\n2\nmade\n",
        "root of its own namespaces, PID 2 under its init"
    );
    // The state dir is covered by an empty tmpfs (holding only the path to the workspace),
    // and Landlock refuses to list it: not even its files' names can be seen.
    let hidden: &[&str] = &["No such file or directory", "Permission denied"];
    let escapes: [(&str, &[&str]); 13] = [
        ("cat /etc/shadow", &["Permission denied"]),
        (&format!("cat {state}/gateway-token"), hidden),
        (
            &format!("ls {state}/switchboard.db"),
            &["No such file or directory"],
        ),
        (
            &format!("stat {state}/gateway-token"),
            &["No such file or directory"],
        ),
        ("cat ../../gateway-token", hidden),
        (&format!("echo x > {state}/planted"), hidden),
        ("echo x > /etc/planted", &["Permission denied"]),
        (
            &format!("ln -s {state} door && cat door/gateway-token"),
            hidden,
        ),
        ("mount -t tmpfs x /mnt", &["permission denied"]),
        (
            "python3 -c 'import ctypes; c = ctypes.CDLL(None, use_errno=True); print(c.ptrace(0, 0, 0, 0), ctypes.get_errno()); exit(1)'",
            &["-1 1\n"],
        ),
        (
            &format!(
                "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'"
            ),
            &["Network is unreachable"],
        ),
        ("python3 -c 'bytearray(1 << 30)'", &["MemoryError"]),
        ("unshare -U true", &["Operation not permitted"]),
    ];
    for (command, expected) in escapes {
        let result = exec(&mut client, json!({"command": command})).await;
        assert!(
            expected.iter().any(|e| output(&result).contains(e)),
            "{command}: {result}"
        );
        assert_ne!(result["exitCode"], 0, "{command}: {result}");
        assert!(
            !output(&result).contains(&gateway.token),
            "{command} read the token"
        );
    }
    assert!(!home.path().join("planted").exists() && !Path::new("/etc/planted").exists());
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "the sandbox reached a loopback listener"
    );

    // Contained: a fork bomb, 100 MB of output, a command that never ends.
    let bomb = exec(
        &mut client,
        json!({"command": "b() { b | b & }; b; sleep 1; echo contained", "timeout": 10}),
    )
    .await;
    assert!(
        ["exited", "timeout"].contains(&bomb["status"].as_str().unwrap()),
        "{bomb}"
    );
    let flood = exec(
        &mut client,
        json!({"command": "head -c 100000000 /dev/zero | tr '\\0' a"}),
    )
    .await;
    assert_eq!(
        (&flood["exitCode"], &flood["truncated"]),
        (&json!(0), &json!(true)),
        "{}",
        &output(&flood)[..100]
    );
    assert!(output(&flood).len() < 40_000);
    let endless = exec(&mut client, json!({"command": "sleep 1000", "timeout": 2})).await;
    assert_eq!(endless["status"], "timeout", "{endless}");

    let health = client.request("health", Value::Null).await.unwrap();
    assert_eq!(health["ok"], true, "{health}");
    let after = exec(&mut client, json!({"command": "cat mine.txt"})).await;
    assert_eq!(output(&after), "made\n", "{after}");
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_dir_the_sandbox_user_may_enter_is_hidden_all_the_same() {
    let home = tempfile::tempdir().unwrap();
    let probe = tempfile::tempdir().unwrap();
    if let Some(why) = kernel_lacks(probe.path()) {
        let test = "a_state_dir_the_sandbox_user_may_enter_is_hidden_all_the_same";
        eprintln!("sandbox test {test} NOT RUN: this kernel cannot build the sandbox: {why}");
        return;
    }
    // The sandbox user is the gateway's own (uid 0 here), as for a gateway run by a user: it
    // may enter the state dir, so only the sandbox's own cover keeps its files' names unseen.
    let config = CONFIG.replace(
        "sandbox: { mode: \"all\",",
        "sandbox: { mode: \"all\", uid: 0,",
    );
    std::fs::write(home.path().join("config.json5"), config).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let state = home.path().display().to_string();
    for command in [
        format!("stat {state}/gateway-token"),
        format!("ls {state}/switchboard.db"),
        format!("cat {state}/config.json5"),
    ] {
        let result = exec(&mut client, json!({"command": command})).await;
        assert!(
            output(&result).contains("No such file or directory"),
            "{command}: {result}"
        );
    }
    let inside = exec(
        &mut client,
        json!({"command": "echo kept > here.txt; cat here.txt"}),
    )
    .await;
    assert_eq!(
        output(&inside),
        "kept\n",
        "the workspace is still there: {inside}"
    );
    gateway.stop();
}

#[test]
fn a_gateway_that_cannot_build_the_sandbox_refuses_to_start_naming_the_piece() {
    // The gateway runs inside a sandbox of its own making, where new namespaces are refused:
    // the kernel it sees lacks that piece.
    let home = tempfile::tempdir().unwrap();
    let root = home.path().canonicalize().unwrap();
    std::fs::write(root.join("config.json5"), CONFIG).unwrap();
    let binary = Path::new(BIN).canonicalize().unwrap();
    let spec = json!({
        "workspace": root, "cwd": root, "network": false, "uid": 65534,
        "readOnly": ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", binary.parent().unwrap()],
        "limits": {"cpuSeconds": 60, "memoryBytes": 4u64 << 30, "processes": 256,
                   "fileSizeBytes": 1u64 << 30, "openFiles": 1024},
    });
    let command = format!(
        "{} gateway --port 0 --state-dir {}",
        binary.display(),
        root.display()
    );
    let ran = std::process::Command::new(BIN)
        .args(["__sandbox", &spec.to_string(), &command])
        .env("SWITCHBOARD_LOG", "warn")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stderr);
    assert!(!ran.status.success(), "{said}");
    assert!(
        said.contains("agent main runs commands in a sandbox (sandbox.mode all), which cannot be built on this machine: sandbox: user, mount, PID and network namespaces (unshare)"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_approves_and_denies_held_commands_with_switchboard_approvals() {
    let home = tempfile::tempdir().unwrap();
    // Outside a sandbox a command the allowlist does not name waits for an operator.
    std::fs::write(
        home.path().join("config.json5"),
        r#"{ tools: { profile: "coding" } }"#,
    )
    .unwrap();
    let gateway = GatewayProcess::start(home.path());
    let cli = |args: &[&str]| {
        let out = super::process::run(home.path(), &gateway.url, args);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let held = |command: &'static str| {
        let (url, token) = (gateway.url.clone(), gateway.token.clone());
        tokio::spawn(async move {
            let mut client = GatewayClient::connect(&url, Some(&token)).await.unwrap();
            exec(&mut client, json!({"command": command})).await
        })
    };
    let id_of = |command: &'static str| async move {
        loop {
            let listed: Value =
                serde_json::from_str(&cli(&["approvals", "list", "--json"])).unwrap();
            let waiting = listed["approvals"].as_array().cloned().unwrap_or_default();
            if let Some(found) = waiting.iter().find(|a| a["command"] == command) {
                return found["id"].as_str().unwrap().to_string();
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    let approved = held("echo let me");
    let id = tokio::time::timeout(std::time::Duration::from_secs(60), id_of("echo let me"))
        .await
        .unwrap();
    let table = cli(&["approvals", "list"]);
    assert!(
        table.contains(&id) && table.contains("echo let me") && table.contains("agent:main:main"),
        "{table}"
    );
    assert_eq!(
        cli(&["approvals", "approve", &id]),
        format!("approved {id}: echo let me\n")
    );
    let ran = approved.await.unwrap();
    assert_eq!(ran["output"], "let me\n", "{ran}");

    let denied = held("touch nope");
    let id = tokio::time::timeout(std::time::Duration::from_secs(60), id_of("touch nope"))
        .await
        .unwrap();
    assert_eq!(
        cli(&["approvals", "deny", &id]),
        format!("denied {id}: touch nope\n")
    );
    let refused = denied.await.unwrap();
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .starts_with("an operator denied"),
        "{refused}"
    );
    assert!(!home.path().join("workspace/main/nope").exists());
    assert_eq!(
        cli(&["approvals", "list"]),
        "No command waits for approval.\n"
    );
    gateway.stop();
}
