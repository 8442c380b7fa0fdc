//! The helper's first stage, in a fresh process with one thread: become the sandbox user when
//! started as root, enter the new namespaces, map itself to root inside them, and run the
//! second stage as PID 1 of the new PID namespace.

use std::os::fd::OwnedFd;
use std::path::Path;

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{Gid, Uid, getgid, getuid, setgroups, setresgid, setresuid};

use super::{INIT, Refusal, Spec, exit_code};

pub fn run(spec: &Spec, command: &str) -> Result<i32, Refusal> {
    let me = std::env::current_exe().map_err(|e| Refusal::of("the helper's own path")(&e))?;
    // Entered while the helper may still be root: the sandbox user may not be able to reach
    // it by its path (a state dir only root may enter); init makes it reachable.
    std::env::set_current_dir(&spec.workspace).map_err(|e| Refusal::of("the workspace")(&e))?;
    if host_root() {
        give_workspace(&spec.workspace, spec.uid)?;
        become_user(spec.uid)?;
    }
    let (uid, gid) = (getuid(), getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS;
    if !spec.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags)
        .map_err(|e| Refusal::of("user, mount, PID and network namespaces (unshare)")(&e))?;
    let maps = Refusal::of("the user namespace's id maps");
    write("/proc/self/setgroups", "deny").map_err(|e| maps(&e))?;
    let maps = Refusal::of("the user namespace's id maps");
    write("/proc/self/uid_map", &format!("0 {uid} 1"))
        .and_then(|()| write("/proc/self/gid_map", &format!("0 {gid} 1")))
        .map_err(|e| maps(&e))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| Refusal::of("a private mount namespace")(&e))?;
    let spec_text = serde_json::to_string(spec).unwrap_or_default();
    let status = std::process::Command::new(me)
        .arg(INIT)
        .arg(spec_text)
        .arg(command)
        .status()
        .map_err(|e| Refusal::of("the sandbox's init")(&e))?;
    Ok(exit_code(status))
}

/// Whether this is the machine's root (uid 0 of the first user namespace), not a namespace's
/// root mapped to someone else.
fn host_root() -> bool {
    let whole = std::fs::read_to_string("/proc/self/uid_map")
        .is_ok_and(|map| map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"]);
    getuid().is_root() && whole
}

fn write(path: &str, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

/// Drops root for `uid` (and its own group), keeping nothing: the sandbox's root inside is
/// that user outside, so the kernel's checks (files, process limits) hold for it.
fn become_user(uid: u32) -> Result<(), Refusal> {
    let (user, group) = (Uid::from_raw(uid), Gid::from_raw(uid));
    let drop = Refusal::of("becoming the sandbox user (agents.defaults.sandbox.uid)");
    setgroups(&[])
        .and_then(|()| setresgid(group, group, group))
        .and_then(|()| setresuid(user, user, user))
        .map_err(|e| drop(&e))?;
    // A process that changed its user is not dumpable: its /proc files stay root's, and it
    // could not write its own id maps.
    nix::sys::prctl::set_dumpable(true).map_err(|e| Refusal::of("the helper's dumpable flag")(&e))
}

/// Gives every file and folder of the workspace to `uid`, walking it with descriptors opened
/// beneath it that never follow a symlink (a command swapping a folder for a symlink cannot
/// turn this walk on a file outside).
fn give_workspace(root: &Path, uid: u32) -> Result<(), Refusal> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = rustix::fs::open(root, flags, Mode::empty())
        .map_err(|e| Refusal::of("the workspace")(&e))?;
    let owner = Some(rustix::fs::Uid::from_raw(uid));
    let group = Some(rustix::fs::Gid::from_raw(uid));
    rustix::fs::fchown(&dir, owner, group).map_err(|e| Refusal::of("the workspace's owner")(&e))?;
    let mut left = 100_000usize;
    give_folder(dir, (owner, group), &mut left);
    Ok(())
}

/// [`give_workspace`] below `dir`, at most `left` entries.
fn give_folder(
    dir: OwnedFd,
    (owner, group): (Option<rustix::fs::Uid>, Option<rustix::fs::Gid>),
    left: &mut usize,
) {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    let Ok(entries) = rustix::fs::Dir::read_from(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." || *left == 0 {
            continue;
        }
        *left -= 1;
        let _ = rustix::fs::chownat(&dir, name, owner, group, AtFlags::SYMLINK_NOFOLLOW);
        if entry.file_type() == FileType::Directory {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            if let Ok(child) = rustix::fs::openat(&dir, name, flags, Mode::empty()) {
                give_folder(child, (owner, group), left);
            }
        }
    }
}
