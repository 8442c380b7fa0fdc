//! MCP servers nobody here wrote, installed from their registries on first use, for the tests of
//! MCP tools: the PyPI `mcp-server-time` (stdio) and the npm
//! `@modelcontextprotocol/server-everything` (stdio and streamable HTTP), each pinned.
//!
//! Each is installed once under the directory a test names (its `CARGO_TARGET_TMPDIR`), behind a
//! file lock, so parallel test processes share one install. A machine without `python3` (with
//! venv) or `node`/`npm` cannot run them: the helpers answer [`Missing`] and the test says so by
//! name on the terminal. An install that fails on a machine that has the tools panics with the
//! installer's output: nothing is skipped quietly.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PyPI package of the time server, pinned.
pub const TIME_SERVER: &str = "mcp-server-time==2026.10.19";
/// The npm package of the "everything" test server, pinned.
pub const EVERYTHING_SERVER: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// What the machine lacks to run a server.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing(pub String);

/// Says that `test` did not run and why ([`crate::not_run`]: a failure under `CI=true`).
pub fn not_run(test: &str, missing: &Missing) {
    crate::not_run(&format!(
        "MCP server test {test} NOT RUN: {} (.ci/run installs it; see docs/tools.md)",
        missing.0
    ));
}

pub(crate) fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `command`; panics with its output, saying `what` failed, unless it succeeds.
pub fn must(command: &mut Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run it: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Installs once into `dir/<name>` (a marker file says it is done), under a lock.
pub(crate) fn once(tmp: &Path, name: &str, install: impl FnOnce(&Path)) -> PathBuf {
    let dir = tmp.join(name);
    std::fs::create_dir_all(tmp).unwrap_or_else(|e| panic!("creating {}: {e}", tmp.display()));
    let lock = File::create(tmp.join(format!("{name}.lock")))
        .unwrap_or_else(|e| panic!("a lock file: {e}"));
    lock.lock()
        .unwrap_or_else(|e| panic!("the install lock: {e}"));
    if !dir.join("installed").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("the install dir: {e}"));
        install(&dir);
        std::fs::write(dir.join("installed"), name)
            .unwrap_or_else(|e| panic!("the install marker: {e}"));
    }
    dir
}

/// A Python with `mcp-server-time` installed: run it as `<python> -m mcp_server_time`.
pub fn time_server(tmp: &Path) -> Result<PathBuf, Missing> {
    python_with(tmp, TIME_SERVER)
}

/// A venv's Python with the pip requirement `package` (`name==version`) installed, made once
/// under `tmp`.
pub fn python_with(tmp: &Path, package: &str) -> Result<PathBuf, Missing> {
    python_with_all(tmp, &[package])
}

/// A venv's Python with every pip requirement of `packages` (each `name==version`, extras
/// allowed) installed, made once under `tmp`.
pub fn python_with_all(tmp: &Path, packages: &[&str]) -> Result<PathBuf, Missing> {
    if !works("python3", &["-c", "import venv, ensurepip"]) {
        return Err(Missing(
            "python3 with venv and pip (apt-get install python3-venv python3-pip)".into(),
        ));
    }
    let name = format!("python-{}", packages.join("+").replace("==", "-")).replace(
        |c: char| !(c.is_ascii_alphanumeric() || "+-._".contains(c)),
        "_",
    );
    Ok(venv(tmp, &name, ("python3", &[]), packages))
}

/// The Python of a venv under `tmp/name` made once by `python` (with `flags` to `-m venv`),
/// with every pip requirement of `packages` installed.
pub(crate) fn venv(
    tmp: &Path,
    name: &str,
    (python, flags): (&str, &[&str]),
    packages: &[&str],
) -> PathBuf {
    let dir = once(tmp, name, |dir| {
        must(
            Command::new(python)
                .args(["-m", "venv"])
                .args(flags)
                .arg(dir.join("venv")),
            &format!("creating a Python venv with `{python} -m venv`"),
        );
        must(
            Command::new(dir.join("venv/bin/python"))
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                ])
                .args(packages),
            &format!("installing {} with pip", packages.join(" ")),
        );
    });
    dir.join("venv/bin/python")
}

/// The "everything" server's entry script: run it as `node <script> [stdio|streamableHttp]`.
pub fn everything_server(tmp: &Path) -> Result<PathBuf, Missing> {
    if !works("node", &["--version"]) || !works("npm", &["--version"]) {
        return Err(Missing("node and npm (apt-get install nodejs npm)".into()));
    }
    let name = format!("npm{}", EVERYTHING_SERVER.replace(['@', '/'], "-"));
    let dir = once(tmp, &name, |dir| {
        must(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(dir)
                .arg(EVERYTHING_SERVER),
            &format!("installing {EVERYTHING_SERVER} with npm"),
        );
    });
    Ok(dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

/// The "everything" server over streamable HTTP, as a child process on a free loopback port;
/// killed when dropped.
pub struct EverythingHttp {
    child: std::process::Child,
    port: u16,
}

impl EverythingHttp {
    /// Starts `node <script> streamableHttp` on a port free on 127.0.0.1 and waits (at most 60 s)
    /// until it accepts connections.
    ///
    /// # Panics
    /// If it cannot be started or never listens.
    pub fn start(script: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("a free loopback port: {e}"));
        Self::start_on(script, port)
    }

    /// As [`EverythingHttp::start`], on `port` (a server started again where one was).
    ///
    /// # Panics
    /// If it cannot be started or never listens.
    pub fn start_on(script: &Path, port: u16) -> Self {
        let child = Command::new("node")
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the everything server with node: {e}"));
        let server = Self { child, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the everything server never listened on 127.0.0.1:{port}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        server
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
