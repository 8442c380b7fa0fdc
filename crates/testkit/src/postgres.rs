//! PostgreSQL for tests. The suites run against SQLite, and against PostgreSQL too when
//! `SWITCHBOARD_TEST_DATABASE_URL` is set (the matrix's second leg; `.ci/run` starts a throw-away
//! cluster and sets it): [`matrix_database`]. Tests that need PostgreSQL whatever the leg
//! (several gateways on one database) take [`database`]: the same URL, else a cluster started
//! here from Debian's `postgresql` binaries, stopped when the test process ends.
//!
//! Every test gets a schema of its own, so tests share a cluster without seeing each other.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The variable that names the matrix's database.
pub const TEST_DATABASE_URL: &str = "SWITCHBOARD_TEST_DATABASE_URL";

/// A database for one test: the server's URL and a schema nobody else uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDatabase {
    pub url: String,
    pub schema: String,
}

/// The matrix's database with a fresh schema; `None` on the SQLite leg.
pub fn matrix_database() -> Option<TestDatabase> {
    let url = std::env::var(TEST_DATABASE_URL)
        .ok()
        .filter(|u| !u.is_empty())?;
    Some(TestDatabase {
        url,
        schema: fresh_schema(),
    })
}

/// A database for a test that needs PostgreSQL: the matrix's, else a cluster of this process.
/// `Err` says why there is none (the test prints it as NOT RUN).
pub fn database() -> Result<TestDatabase, String> {
    if let Some(db) = matrix_database() {
        return Ok(db);
    }
    let url = CLUSTER.get_or_init(start_cluster).clone()?;
    Ok(TestDatabase {
        url,
        schema: fresh_schema(),
    })
}

/// The line a test that cannot have PostgreSQL prints.
pub fn not_run(test: &str, why: &str) {
    crate::not_run(&format!(
        "PostgreSQL test {test} NOT RUN: {why} (apt-get install postgresql, or set {TEST_DATABASE_URL})"
    ));
}

fn fresh_schema() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "t{}_{}_{}",
        std::process::id(),
        nanos,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The URL of this process's cluster, or why it could not start.
static CLUSTER: OnceLock<Result<String, String>> = OnceLock::new();
/// The shell that holds the cluster: it stops it when our end of its stdin closes (this process
/// ends, however it ends).
static KEEPER: Mutex<Option<Child>> = Mutex::new(None);

const KEEP: &str = r#"set -e
dir=$1; port=$2; bin=$3; tls=$4; shift 4
"$@" "$bin/initdb" -D "$dir/data" -U switchboard --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1
extra=""
if [ "$tls" = tls ]; then
  # A CA of the test's, a server certificate it signed for localhost and 127.0.0.1, another
  # CA that signed nothing; connections over TCP must use TLS.
  cd "$dir"
  "$@" openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=switchboard-test-ca >>initdb.log 2>&1
  "$@" openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=another-ca >>initdb.log 2>&1
  "$@" openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost >>initdb.log 2>&1
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >san.ext
  "$@" openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile san.ext >>initdb.log 2>&1
  "$@" chmod 600 server.key
  printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n' | "$@" tee data/pg_hba.conf >/dev/null
  extra="-c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key"
fi
"$@" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=400 $extra" start >/dev/null
echo ready
cat >/dev/null || true
"$@" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
rm -rf "$dir"
"#;

fn start_cluster() -> Result<String, String> {
    let (url, child, _) = launch("testpg", false)?;
    if let Ok(mut keeper) = KEEPER.lock() {
        *keeper = Some(child);
    }
    Ok(url)
}

/// A cluster of one test's own, which it may pause (every server process stopped with
/// SIGSTOP, as a stalled machine would be) and resume; stopped when dropped.
pub struct PrivateCluster {
    pub db: TestDatabase,
    dir: PathBuf,
    bin: PathBuf,
    keeper: Child,
}

/// Starts a [`PrivateCluster`]; `Err` says why there is none (print it with [`not_run`]).
pub fn private_cluster() -> Result<PrivateCluster, String> {
    private(false)
}

/// A [`PrivateCluster`] that takes connections over TCP with TLS only, its certificate (for
/// `localhost` and `127.0.0.1`) signed by a CA of its own: answers the cluster, that CA's
/// certificate file, and another CA's that signed nothing.
pub fn private_tls_cluster() -> Result<(PrivateCluster, PathBuf, PathBuf), String> {
    let cluster = private(true)?;
    let (ca, other) = (cluster.dir.join("ca.crt"), cluster.dir.join("other-ca.crt"));
    Ok((cluster, ca, other))
}

fn private(tls: bool) -> Result<PrivateCluster, String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!("own{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let (url, keeper, dir) = launch(&name, tls)?;
    Ok(PrivateCluster {
        db: TestDatabase {
            url,
            schema: fresh_schema(),
        },
        bin: server_binaries().unwrap_or_default(),
        dir,
        keeper,
    })
}

impl PrivateCluster {
    /// Stops the postmaster, then every process it started (nothing answers until
    /// [`PrivateCluster::resume`]).
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// Restarts the server (a fast shutdown: every connection is cut), on the same port; answers
    /// once it takes connections again.
    pub fn restart(&self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let mut command = match is_root() {
            true => {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&pg_ctl);
                c
            }
            false => Command::new(&pg_ctl),
        };
        let status = command
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "fast", "-w", "restart"])
            .stdout(Stdio::null())
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "the test cluster did not restart"
        );
    }

    /// Lets the server processes go on, children first.
    pub fn resume(&self) {
        self.signal("CONT");
    }

    /// Kills the server's WAL writer with SIGKILL, as a crash would: the postmaster ends every
    /// other process, throws its shared memory away (with any log not written yet) and
    /// recovers from what was written. Answers once a new WAL writer runs, after the recovery
    /// (the connections made before are gone).
    pub fn crash(&self) {
        let postmaster = self.postmaster();
        let writer = || {
            let out = Command::new("pgrep")
                .args(["-P", &postmaster, "-f", "walwriter"])
                .output();
            out.ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .filter(|pid| !pid.is_empty())
        };
        let Some(old) = writer() else {
            panic!("the test cluster has no WAL writer to kill");
        };
        let killed = Command::new("kill").args(["-KILL", &old]).status();
        assert!(killed.is_ok_and(|s| s.success()), "kill -KILL {old} failed");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while writer().is_none_or(|pid| pid == old) {
            assert!(
                std::time::Instant::now() < deadline,
                "the test cluster did not recover from its crash within a minute"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn postmaster(&self) -> String {
        let Some(pid) = std::fs::read_to_string(self.dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|pid| pid.lines().next().map(str::trim).map(str::to_string))
        else {
            panic!(
                "the test cluster has no postmaster.pid in {}",
                self.dir.display()
            );
        };
        pid
    }

    fn signal(&self, signal: &str) {
        let pid = self.postmaster();
        let sig = format!("-{signal}");
        let all = || {
            let _ = Command::new("pkill").args([&sig, "-P", &pid]).status();
        };
        match signal {
            "STOP" => {
                let _ = Command::new("kill").args([&sig, &pid]).status();
                all();
            }
            _ => {
                all();
                let _ = Command::new("kill").args([&sig, &pid]).status();
            }
        }
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        self.resume();
        // Closing its stdin lets the keeper stop the cluster and remove its directory.
        drop(self.keeper.stdin.take());
        let _ = self.keeper.wait();
    }
}

/// Starts a cluster in a temp dir named after `name`: its URL, the shell that keeps it, and
/// the dir.
fn launch(name: &str, tls: bool) -> Result<(String, Child, PathBuf), String> {
    let bin = server_binaries().ok_or("PostgreSQL server binaries not found")?;
    let dir = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let port = crate::keeper::free_port()?;
    let mut command = Command::new("sh");
    command
        .args(["-c", KEEP, "keeper"])
        .arg(&dir)
        .arg(port.to_string())
        .arg(&bin)
        .arg(if tls { "tls" } else { "plain" });
    if is_root() {
        // PostgreSQL refuses to run as root: the package's own user runs it.
        Command::new("chown")
            .arg("postgres:")
            .arg(&dir)
            .status()
            .map_err(|e| format!("chown: {e}"))?;
        command.args(["runuser", "-u", "postgres", "--"]);
    }
    let (mut child, line) = crate::keeper::start(&mut command)?;
    if line != "ready" {
        let log = std::fs::read_to_string(dir.join("initdb.log")).unwrap_or_default();
        let _ = child.kill();
        return Err(format!("the test cluster did not start: {log}"));
    }
    Ok((
        format!("postgres://switchboard@127.0.0.1:{port}/postgres"),
        child,
        dir,
    ))
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb`.
fn server_binaries() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}
