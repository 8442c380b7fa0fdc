//! When a start can skip the mirror sweep (`writer.rs`): a clean stop records the mirror
//! directories as it leaves them, and a start that finds them as recorded does not `stat` every
//! transcript's file again (a minute of background work at a million sessions).
//!
//! What a record vouches for: when the stop wrote it, every transcript's file existed. The stop
//! writes one only when this process can say so:
//! - its sweep finished, or was skipped on a record that held;
//! - no mirror write is failing;
//! - nothing removed a transcript file while it ran. An inotify watch on each agent's
//!   `sessions` directory, set at the start before the record is compared, reports every
//!   removal: a file deleted or moved out, the directory itself going, or the event queue
//!   overflowing. The gateway's own removals count too; the next start then sweeps.
//!
//! A file removed while the gateway is stopped changes its directory's modification and change
//! times, so the next start finds the record stale and sweeps. Before the stop's last look at the
//! events it waits until the clock is past the times it recorded, so a removal after that look
//! cannot leave the times as recorded. A directory an agent's first session made during the run
//! was not watched from the start: no record then either.

use std::ffi::OsStr;
use std::fs;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use crate::store::mirror;

/// How far past the recorded times the clock must be before the stop's last look at the events:
/// well above the kernel's coarse clock tick, which stamps directory times.
const SETTLE: Duration = Duration::from_millis(50);

/// The agents' `sessions` directories as they are now: their names (sorted), and a line of
/// text that changes whenever any of them gains or loses an entry, or is replaced.
struct Dirs {
    agents: Vec<String>,
    text: String,
    /// The newest time in `text`.
    newest: Duration,
    /// Whether every time has whole seconds only (a file system that could not tell two changes
    /// in one second apart).
    coarse: bool,
}

impl Dirs {
    fn read(home: &Path) -> Dirs {
        let mut agents: Vec<String> = fs::read_dir(mirror::agents_dir(home))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
            .collect();
        agents.sort();
        let mut dirs = Dirs {
            agents: Vec::new(),
            text: String::new(),
            newest: Duration::ZERO,
            coarse: true,
        };
        for agent in agents {
            let Ok(meta) = fs::metadata(mirror::sessions_dir(home, &agent)) else {
                continue;
            };
            let stamp = |secs: i64, nanos: i64| {
                let secs = u64::try_from(secs).unwrap_or(0);
                Duration::new(secs, u32::try_from(nanos).unwrap_or(0))
            };
            let (modified, changed) = (
                stamp(meta.mtime(), meta.mtime_nsec()),
                stamp(meta.ctime(), meta.ctime_nsec()),
            );
            dirs.newest = dirs.newest.max(modified).max(changed);
            dirs.coarse &= modified.subsec_nanos() == 0 && changed.subsec_nanos() == 0;
            dirs.text.push_str(&format!(
                "{agent}:{}:{}:{};",
                meta.ino(),
                modified.as_nanos(),
                changed.as_nanos()
            ));
            dirs.agents.push(agent);
        }
        dirs
    }
}

/// The start's verdict and the watch that lets the stop vouch again.
pub(super) struct Checked {
    home: PathBuf,
    /// `None` when inotify could not be set up: no stop of this process vouches.
    watch: Option<OwnedFd>,
    /// The agents whose directory is watched.
    watched: Vec<String>,
    /// Whether a removal (or an overflow) was seen.
    removed: bool,
    /// Whether the start found the directories as the last clean stop recorded them.
    skip_sweep: bool,
}

impl Checked {
    /// Watches the mirror directories, then compares them with the last clean stop's record.
    pub(super) fn start(conn: &Connection, home: &Path) -> Checked {
        let watching = Dirs::read(home).agents;
        let watch = watch(home, &watching)
            .inspect_err(|e| tracing::debug!(error = %e, "mirror directories not watched"))
            .ok();
        let recorded: Option<String> = conn
            .query_row("SELECT dirs FROM mirror_checked WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "could not read the mirror check record");
                None
            });
        let now = Dirs::read(home);
        let skip = watch.is_some()
            && now.agents == watching
            && recorded.as_deref() == Some(now.text.as_str());
        Checked {
            home: home.to_path_buf(),
            watch,
            watched: watching,
            removed: false,
            skip_sweep: skip,
        }
    }

    /// Nothing watched: the start sweeps and no stop vouches (a writer tested without a store).
    #[cfg(test)]
    pub(super) fn unwatched(home: &Path) -> Checked {
        Checked {
            home: home.to_path_buf(),
            watch: None,
            watched: Vec::new(),
            removed: false,
            skip_sweep: false,
        }
    }

    /// Whether the start found the directories as the last clean stop recorded them.
    pub(super) fn skips_sweep(&self) -> bool {
        self.skip_sweep
    }

    /// At a clean stop: records the directories when this process can vouch that every
    /// transcript's file exists (`all_checked`: its sweep is done and no mirror write is
    /// failing), and removes any older record otherwise.
    pub(super) fn record(&mut self, conn: &Connection, all_checked: bool) {
        let dirs = if all_checked { self.settled() } else { None };
        let result = match &dirs {
            Some(text) => conn.execute(
                "INSERT OR REPLACE INTO mirror_checked (id, dirs) VALUES (1, ?1)",
                [text],
            ),
            None => conn.execute("DELETE FROM mirror_checked", []),
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not record the mirror check");
        }
    }

    /// The directories' text, if nothing was removed from them up to a moment when the clock is
    /// past every time in it.
    fn settled(&mut self) -> Option<String> {
        if !self.quiet() {
            return None;
        }
        let dirs = Dirs::read(&self.home);
        if dirs.coarse || dirs.agents != self.watched {
            return None;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        if let Some(wait) = (dirs.newest + SETTLE).checked_sub(now) {
            // A time ahead of the clock (it was set back): a change after this look could get
            // the time recorded, so this stop does not vouch.
            if wait > SETTLE {
                return None;
            }
            std::thread::sleep(wait);
        }
        self.quiet().then_some(dirs.text)
    }

    /// Reads the events so far: whether none of them removed a transcript file.
    fn quiet(&mut self) -> bool {
        let Some(fd) = &self.watch else {
            return false;
        };
        let mut buf = [MaybeUninit::uninit(); 4096];
        let mut reader = inotify::Reader::new(fd, &mut buf);
        loop {
            match reader.next() {
                Ok(event) => {
                    let name = event.file_name().map(|n| OsStr::from_bytes(n.to_bytes()));
                    self.removed |= removes_a_file(event.events(), name);
                }
                Err(Errno::AGAIN) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "could not read the mirror directories' events");
                    self.removed = true;
                    break;
                }
            }
        }
        !self.removed
    }
}

/// Whether an event on a `sessions` directory may have taken a transcript file away.
fn removes_a_file(events: ReadFlags, name: Option<&OsStr>) -> bool {
    let gone = ReadFlags::DELETE_SELF
        | ReadFlags::MOVE_SELF
        | ReadFlags::IGNORED
        | ReadFlags::UNMOUNT
        | ReadFlags::QUEUE_OVERFLOW;
    if events.intersects(gone) {
        return true;
    }
    events.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM)
        && name.is_some_and(|n| Path::new(n).extension() == Some(OsStr::new("jsonl")))
}

fn watch(home: &Path, agents: &[String]) -> rustix::io::Result<OwnedFd> {
    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
    let flags = WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR;
    for agent in agents {
        inotify::add_watch(&fd, mirror::sessions_dir(home, agent), flags)?;
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_transcript_file_or_the_directory_going_counts_as_a_removal() {
        let jsonl = Some(OsStr::new("0197-a.jsonl"));
        let index = Some(OsStr::new(".sessions.json.tmp"));
        assert!(removes_a_file(ReadFlags::DELETE, jsonl));
        assert!(removes_a_file(ReadFlags::MOVED_FROM, jsonl));
        assert!(!removes_a_file(ReadFlags::MOVED_FROM, index));
        assert!(!removes_a_file(ReadFlags::DELETE, index));
        assert!(removes_a_file(ReadFlags::DELETE_SELF, None));
        assert!(removes_a_file(ReadFlags::QUEUE_OVERFLOW, None));
        assert!(removes_a_file(ReadFlags::IGNORED, None));
    }
}
