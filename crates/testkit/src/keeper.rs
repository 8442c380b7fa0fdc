//! A shell that holds a server for a test process (PostgreSQL, Synapse): it starts the server,
//! prints one line (`ready`, or why not), and stops the server when its stdin closes — that is
//! when the test process ends, however it ends.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Spawns `command` (a keeper shell) with its stdin held open, and answers it with the first
/// line it printed.
pub(crate) fn start(command: &mut Command) -> Result<(Child, String), String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start sh: {e}"))?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    Ok((child, line.trim().to_string()))
}

/// A loopback port nobody listens on now (for a server that takes its port on the command line).
pub(crate) fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("a free loopback port: {e}"))
}
