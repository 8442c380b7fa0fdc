//! Prometheus for tests, from Debian's `prometheus` package (`.ci/run` installs it): `promtool
//! check metrics` on a scrape ([`check_metrics`]), and a real Prometheus server that scrapes a
//! gateway every second ([`Prometheus::start`]) and answers PromQL over its HTTP API
//! ([`Prometheus::query`]). The server runs under a keeper shell, so it stops when the test
//! process ends, however it ends, and when the [`Prometheus`] is dropped.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The binaries, or why they are missing (the test passes it to [`crate::not_run`]).
fn binary(name: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from("/usr/bin").join(name);
    match path.is_file() {
        true => Ok(path),
        false => Err(format!(
            "{name} is not installed (apt-get install prometheus; .ci/run installs it)"
        )),
    }
}

/// `promtool check metrics` on `text` (a scrape): `Ok` with what it printed when it found
/// nothing wrong, `Err` with its complaints otherwise. The outer `Err` says promtool is missing.
pub fn check_metrics(text: &str) -> Result<Result<String, String>, String> {
    let promtool = binary("promtool")?;
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running promtool: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| format!("writing to promtool: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for promtool: {e}"))?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(match out.status.success() {
        true => Ok(said),
        false => Err(said),
    })
}

/// How a scrape authenticates.
pub enum ScrapeAuth<'a> {
    /// `Authorization: Bearer <token>` (the token is written to a file of the server's, mode
    /// 0600, and named in its config: it is not on a command line).
    Bearer(&'a str),
    /// Nothing.
    None,
}

/// A Prometheus server scraping one target every second.
pub struct Prometheus {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    dir: PathBuf,
    keeper: Child,
}

const KEEP: &str = r#"
dir=$1; bin=$2; port=$3
"$bin" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
  --web.listen-address="127.0.0.1:$port" >"$dir/out.log" 2>&1 &
pid=$!
echo ready
cat >/dev/null || true
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
rm -rf "$dir"
"#;

impl Prometheus {
    /// Starts a server that scrapes `http://<target>/metrics` every second with `auth`, and
    /// waits until it answers. `Err` says why there is none.
    pub async fn start(target: SocketAddr, auth: ScrapeAuth<'_>) -> Result<Self, String> {
        let bin = binary("prometheus")?;
        let dir = std::env::temp_dir().join(format!(
            "switchboard-prometheus-{}-{}",
            std::process::id(),
            target.port()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let credentials = match auth {
            ScrapeAuth::Bearer(token) => {
                let file = dir.join("token");
                write_private(&file, token)?;
                format!(
                    "    authorization:\n      type: Bearer\n      credentials_file: \"{}\"\n",
                    file.display()
                )
            }
            ScrapeAuth::None => String::new(),
        };
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: switchboard\n    scrape_interval: 1s\n    \
             scrape_timeout: 1s\n    metrics_path: /metrics\n{credentials}    \
             static_configs:\n      - targets: [\"{target}\"]\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config)
            .map_err(|e| format!("writing prometheus.yml: {e}"))?;
        let port = crate::keeper::free_port()?;
        let mut command = Command::new("sh");
        command
            .args(["-c", KEEP, "keeper"])
            .arg(&dir)
            .arg(&bin)
            .arg(port.to_string());
        let (keeper, line) = crate::keeper::start(&mut command)?;
        let server = Self {
            url: format!("http://127.0.0.1:{port}"),
            dir,
            keeper,
        };
        if line != "ready" {
            return Err(format!("the keeper shell said {line:?}"));
        }
        server.ready().await?;
        Ok(server)
    }

    /// Waits for `/-/ready` (a minute at most: longer is a broken installation).
    async fn ready(&self) -> Result<(), String> {
        let client = crate::http_client();
        for _ in 0..600 {
            let answer = client.get(format!("{}/-/ready", self.url)).send().await;
            if answer.is_ok_and(|a| a.status().is_success()) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("Prometheus did not start:\n{}", self.log()))
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
    }

    /// An instant query: the `data.result` array of `/api/v1/query`.
    pub async fn query(&self, promql: &str) -> Result<serde_json::Value, String> {
        let answer = self.api(&format!("query?query={}", encode(promql))).await?;
        match answer["status"].as_str() {
            Some("success") => Ok(answer["data"]["result"].clone()),
            _ => Err(format!("query {promql:?} failed: {answer}")),
        }
    }

    /// The scrape targets as the server sees them (`/api/v1/targets`: health, last error).
    pub async fn targets(&self) -> Result<serde_json::Value, String> {
        Ok(self.api("targets").await?["data"]["activeTargets"].clone())
    }

    /// The JSON answer of `GET /api/v1/<path>`.
    async fn api(&self, path: &str) -> Result<serde_json::Value, String> {
        crate::http_client()
            .get(format!("{}/api/v1/{path}", self.url))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())
    }
}

impl Drop for Prometheus {
    /// Closing the keeper's stdin stops the server and removes its directory.
    fn drop(&mut self) {
        drop(self.keeper.stdin.take());
        let _ = self.keeper.wait();
    }
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `text` percent-encoded for a query string (letters, digits and `-._~` kept).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
