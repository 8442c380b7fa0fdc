//! The helper's second stage: PID 1 of the sandbox's PID namespace. It makes the workspace
//! reachable by its own path, mounts a fresh `/proc` and a private `/tmp`, sets the limits,
//! confines itself (Landlock, then seccomp: both are inherited by what it runs), runs
//! `sh -c` in the folder asked for, and reaps until that shell ends. When PID 1 ends the
//! kernel kills everything else in the namespace; when the first stage dies, PID 1 is killed
//! with it (`PR_SET_PDEATHSIG`).

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::Signal;
use nix::sys::stat::Mode;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{AccessFlags, Pid, access};

use super::{Refusal, Spec, rules};

/// Size of the sandbox's private `/tmp`.
const TMP_SIZE: &str = "size=256m,mode=1777";

pub fn run(spec: &Spec, command: &str) -> Result<i32, Refusal> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| Refusal::of("the init's parent-death signal")(&e))?;
    for folder in &spec.hide {
        cover(folder, &spec.workspace)
            .map_err(|e| Refusal::of("an empty tmpfs over the state dir")(&e))?;
    }
    reach_workspace(&spec.workspace)?;
    let fresh = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        fresh | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| Refusal::of("a fresh /proc")(&e))?;
    // A workspace under /tmp would be hidden by it: there the command has no /tmp at all.
    let private_tmp = !spec.workspace.starts_with("/tmp");
    if private_tmp {
        mount(Some("tmpfs"), "/tmp", Some("tmpfs"), fresh, Some(TMP_SIZE))
            .map_err(|e| Refusal::of("a private /tmp")(&e))?;
    }
    let _ = nix::unistd::sethostname("sandbox");
    limit(spec)?;
    rules::landlock(spec, private_tmp)?;
    rules::seccomp()?;
    let shell = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(&spec.cwd)
        .spawn()
        .map_err(|e| Refusal::of("the shell")(&e))?;
    Ok(reap(Pid::from_raw(shell.id() as i32)))
}

/// Waits for every child until `shell` ends; answers its exit code.
fn reap(shell: Pid) -> i32 {
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == shell => return code,
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == shell => return 128 + signal as i32,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return super::REFUSED,
        }
    }
}

/// Sets the rlimits (soft and hard: the command may not raise them).
fn limit(spec: &Spec) -> Result<(), Refusal> {
    let limits = &spec.limits;
    for (resource, value) in [
        (Resource::RLIMIT_CPU, limits.cpu_seconds),
        (Resource::RLIMIT_AS, limits.memory_bytes),
        (Resource::RLIMIT_NPROC, limits.processes),
        (Resource::RLIMIT_FSIZE, limits.file_size_bytes),
        (Resource::RLIMIT_NOFILE, limits.open_files),
        (Resource::RLIMIT_CORE, 0),
    ] {
        setrlimit(resource, value, value).map_err(|e| Refusal::of("the limits (setrlimit)")(&e))?;
    }
    Ok(())
}

/// Makes `workspace` (the current folder) reachable by its path when the sandbox user may not
/// pass through one of its parents (a state dir only root may enter): a small tmpfs is mounted
/// on the first such parent — hiding what it held — the path to the workspace is made in it,
/// and the workspace is bound there.
fn reach_workspace(workspace: &Path) -> Result<(), Refusal> {
    if access(workspace, AccessFlags::X_OK).is_ok() {
        return Ok(());
    }
    let closed = workspace
        .ancestors()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find(|folder| access(*folder, AccessFlags::X_OK).is_err())
        .unwrap_or(workspace)
        .to_path_buf();
    cover(&closed, workspace)
        .map_err(|e| Refusal::of("the workspace's path inside the sandbox")(&e))
}

/// Mounts a small empty tmpfs on `folder`, hiding what it held; when `workspace` (the current
/// folder) is beneath it, the path to the workspace is made in it and the workspace bound there.
fn cover(folder: &Path, workspace: &Path) -> nix::Result<()> {
    if !folder.is_dir() {
        return Ok(());
    }
    mount(
        Some("tmpfs"),
        folder,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("size=1m,mode=0755"),
    )?;
    if !workspace.starts_with(folder) {
        return Ok(());
    }
    make_path(folder, workspace)?;
    mount(
        Some("."),
        workspace,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )?;
    nix::unistd::chdir(workspace)
}

/// Makes each folder from below `top` down to `path`.
fn make_path(top: &Path, path: &Path) -> nix::Result<()> {
    let mut folder = PathBuf::from(top);
    for part in path.strip_prefix(top).unwrap_or(Path::new("")).components() {
        folder.push(part);
        match nix::unistd::mkdir(&folder, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
