//! One gateway per state dir. A second gateway on the same dir would run every cron job,
//! channel poller and resumed run twice and could not see the first one's writes in its kept
//! pages. The gateway holds an exclusive lock on `<state dir>/gateway.lock` for as long as it
//! runs (the system drops it when the process ends, however it ends), with its pid written in
//! the file for the next one's message.

use std::fs::{File, TryLockError};
use std::io::{ErrorKind, Read, Seek, Write};
use std::path::Path;

use anyhow::{Result, anyhow};

const LOCK_FILE: &str = "gateway.lock";

/// The held lock; dropping it (the process ending) lets the next gateway in.
pub struct StateLock {
    _file: File,
}

/// Takes the state dir for this gateway, creating the dir if needed. Fails with what was found
/// and what to do: a dir this user cannot write, or another gateway holding it.
pub fn take(home: &Path) -> Result<StateLock> {
    std::fs::create_dir_all(home).map_err(|e| unwritable(home, &e))?;
    let path = home.join(LOCK_FILE);
    let mut file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| unwritable(home, &e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let pid = holder.trim();
            let (who, stop) = match pid.parse::<u32>() {
                Ok(pid) => (
                    format!("another gateway (pid {pid})"),
                    format!(" (`kill {pid}`)"),
                ),
                Err(_) => ("another gateway".to_string(), String::new()),
            };
            return Err(anyhow!(
                "the state dir {} is in use by {who}: one state dir serves one gateway. Stop it \
                 first{stop}, or give this one a state dir of its own (--state-dir or \
                 SWITCHBOARD_HOME); several gateways share sessions through PostgreSQL \
                 (docs/scale-out.md)",
                home.display()
            ));
        }
        Err(TryLockError::Error(e)) => {
            return Err(anyhow!("could not lock {}: {e}", path.display()));
        }
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| write!(file, "{}", std::process::id()))
        .map_err(|e| unwritable(home, &e))?;
    Ok(StateLock { _file: file })
}

/// Takes the state dir for a command that writes into its store (`import`, `dev seed`): a
/// gateway running on it would not see those rows in the list pages it keeps, and would keep
/// answering without them. Refused while one holds it, with what to do.
pub fn take_to_write(home: &Path, command: &str) -> Result<StateLock> {
    if let Some(pid) = holder(home) {
        return Err(anyhow!(
            "`{command}` writes into the store of {}, which a running gateway (pid {pid}) \
             serves: stop it first (`kill {pid}`), run `{command}`, then start the gateway \
             again",
            home.display()
        ));
    }
    take(home)
}

/// The pid of the gateway that holds `home` now, if one does (for `doctor`).
pub fn holder(home: &Path) -> Option<u32> {
    let mut file = File::open(home.join(LOCK_FILE)).ok()?;
    match file.try_lock_shared() {
        Err(TryLockError::WouldBlock) => {
            let mut pid = String::new();
            file.read_to_string(&mut pid).ok()?;
            pid.trim().parse().ok()
        }
        _ => None,
    }
}

fn unwritable(home: &Path, e: &std::io::Error) -> anyhow::Error {
    match e.kind() {
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => anyhow!(
            "the state dir {} is not writable by this user ({e}): give it to the user that runs \
             the gateway (`chown -R`), or pick another with --state-dir or SWITCHBOARD_HOME",
            home.display()
        ),
        _ => anyhow!("could not use the state dir {}: {e}", home.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_told_who_holds_the_dir() {
        let home = tempfile::tempdir().unwrap();
        let held = take(home.path()).unwrap();
        let refused = take(home.path()).err().unwrap().to_string();
        let pid = std::process::id();
        assert!(
            refused.contains(&format!("in use by another gateway (pid {pid})")),
            "{refused}"
        );
        assert!(refused.contains(&format!("`kill {pid}`")), "{refused}");
        drop(held);
        take(home.path()).unwrap();
    }
}
