//! Files beneath a workspace, and nowhere else: every path is opened with `openat2` and
//! `RESOLVE_BENEATH` from the workspace's own descriptor, so the kernel refuses a `..` or a
//! symlink that leaves it, however the folders change between two calls (a command swapping
//! a folder for a symlink cannot race a check: there is no check apart from the open). A path
//! is first read as written (relative, or absolute inside the workspace), so the common
//! mistakes are named before the kernel is asked.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Why a path cannot be used: the message says what was given and what is accepted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PathError {
    #[error(
        "`{0}` is outside your workspace ({1}); give a path relative to it, such as notes/todo.md"
    )]
    Outside(String, &'static str),
    #[error("`{0}` does not exist in your workspace")]
    Missing(String),
    #[error("`{0}` is a folder; give the path of a file")]
    Folder(String),
    #[error("no path was given; give a path relative to your workspace, such as notes/todo.md")]
    Empty,
    #[error("`{0}`: {1}")]
    Io(String, String),
}

/// An agent's workspace, opened once per call.
pub struct Workspace {
    root: PathBuf,
    dir: OwnedFd,
}

impl Workspace {
    /// Opens `root`, making it (for its owner only) when missing.
    pub fn open(root: &Path) -> io::Result<Self> {
        if !root.exists() {
            std::fs::create_dir_all(root)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))?;
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = rustix::fs::open(root, flags, Mode::empty())?;
        Ok(Self {
            root: root.to_path_buf(),
            dir,
        })
    }

    /// `given` as a path inside the workspace: relative, or absolute under the workspace's
    /// own path; a `..` that climbs above it is refused by name.
    pub fn relative(&self, given: &str) -> Result<PathBuf, PathError> {
        let trimmed = given.trim();
        if trimmed.is_empty() {
            return Err(PathError::Empty);
        }
        let path = Path::new(trimmed);
        let inside = match path.strip_prefix(&self.root) {
            Ok(rest) => rest,
            Err(_) if path.is_absolute() => {
                return Err(PathError::Outside(
                    given.into(),
                    "an absolute path elsewhere",
                ));
            }
            Err(_) => path,
        };
        let mut parts = PathBuf::new();
        for component in inside.components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir if parts.pop() => {}
                _ => return Err(PathError::Outside(given.into(), "`..` climbs above it")),
            }
        }
        Ok(parts)
    }

    /// Opens `path` (from [`Workspace::relative`]) with `flags`, the kernel refusing any way
    /// out of the workspace.
    fn open_at(&self, path: &Path, flags: OFlags, given: &str) -> Result<File, PathError> {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let target: &Path = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        // openat2 takes a mode only with O_CREAT (else EINVAL).
        let mode = match flags.contains(OFlags::CREATE) {
            true => Mode::from(0o644),
            false => Mode::empty(),
        };
        loop {
            match rustix::fs::openat2(&self.dir, target, flags | OFlags::CLOEXEC, mode, resolve) {
                Ok(fd) => return Ok(File::from(fd)),
                Err(Errno::INTR | Errno::AGAIN) => continue,
                Err(e) => return Err(describe(e, given)),
            }
        }
    }

    /// Opens `path` for reading (a folder is refused).
    pub fn open_file(&self, path: &Path, given: &str) -> Result<File, PathError> {
        let file = self.open_at(path, OFlags::RDONLY, given)?;
        match file.metadata() {
            Ok(meta) if meta.is_dir() => Err(PathError::Folder(given.into())),
            Ok(_) => Ok(file),
            Err(e) => Err(PathError::Io(given.into(), e.to_string())),
        }
    }

    /// Reads the whole file at `path`, refusing one over `max` bytes.
    pub fn read_all(&self, path: &Path, given: &str, max: u64) -> Result<String, PathError> {
        let file = self.open_file(path, given)?;
        let mut bytes = Vec::new();
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| PathError::Io(given.into(), e.to_string()))?;
        if bytes.len() as u64 > max {
            return Err(PathError::Io(
                given.into(),
                format!(
                    "the file is over {max} bytes; edit smaller files, or change it with a command"
                ),
            ));
        }
        String::from_utf8(bytes)
            .map_err(|_| PathError::Io(given.into(), "the file is not UTF-8 text".into()))
    }

    /// Writes `content` as the whole file at `path`, making missing folders; answers whether
    /// the file is new. The content goes to a file beside it first, synced, then renamed over
    /// it: a crash leaves the old file or the new one, never half of one.
    pub fn write(&self, path: &Path, given: &str, content: &[u8]) -> Result<bool, PathError> {
        if let Some(parent) = path.parent() {
            self.make_folders(parent, given)?;
        }
        let (folder, name) = self.parent_of(path, given)?;
        let existed = match self.open_at(path, OFlags::PATH, given) {
            Ok(_) => true,
            Err(PathError::Missing(_)) => false,
            Err(e) => return Err(e),
        };
        let spare = format!(".{}.{}.tmp", name.display(), uuid::Uuid::new_v4().simple());
        let spare_path = path.with_file_name(&spare);
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        let mut file = self.open_at(&spare_path, flags, given)?;
        let written = file.write_all(content).and_then(|()| file.sync_data());
        let renamed = written
            .map_err(|e| PathError::Io(given.into(), e.to_string()))
            .and_then(|()| {
                rustix::fs::renameat(&folder, spare.as_str(), &folder, name)
                    .map_err(|e| describe(e, given))
            });
        if renamed.is_err() {
            let _ = rustix::fs::unlinkat(&folder, spare.as_str(), AtFlags::empty());
        }
        renamed.map(|()| !existed)
    }

    /// Makes the folder `path` (and its parents) when missing; a file there is refused.
    pub fn folder(&self, path: &Path, given: &str) -> Result<(), PathError> {
        self.make_folders(path, given)?;
        match self.open_at(path, OFlags::PATH | OFlags::DIRECTORY, given) {
            Err(PathError::Io(..)) => Err(PathError::Io(
                given.into(),
                "is a file, not a folder".into(),
            )),
            other => other.map(drop),
        }
    }

    /// Removes the file at `path`.
    pub fn remove(&self, path: &Path, given: &str) -> Result<(), PathError> {
        let (parent, name) = self.parent_of(path, given)?;
        self.open_file(path, given)?;
        rustix::fs::unlinkat(&parent, name, AtFlags::empty()).map_err(|e| describe(e, given))
    }

    /// The folder holding `path`, opened beneath the workspace, and the file's name in it.
    fn parent_of<'p>(&self, path: &'p Path, given: &str) -> Result<(OwnedFd, &'p Path), PathError> {
        let name = path.file_name().ok_or(PathError::Folder(given.into()))?;
        let parent = path.parent().unwrap_or(Path::new(""));
        let folder = self.open_at(parent, OFlags::PATH | OFlags::DIRECTORY, given)?;
        Ok((OwnedFd::from(folder), Path::new(name)))
    }

    /// Makes each missing folder of `folders`, each one opened beneath the workspace first.
    fn make_folders(&self, folders: &Path, given: &str) -> Result<(), PathError> {
        let mut made = PathBuf::new();
        for part in folders.components() {
            let parent = self.open_at(&made, OFlags::PATH | OFlags::DIRECTORY, given)?;
            match rustix::fs::mkdirat(&parent, part.as_os_str(), Mode::from(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(describe(e, given)),
            }
            made.push(part);
        }
        Ok(())
    }
}

/// A refused open, in the words of [`PathError`].
fn describe(e: Errno, given: &str) -> PathError {
    match e {
        Errno::XDEV => PathError::Outside(given.into(), "a symlink leads out of it"),
        Errno::NOENT => PathError::Missing(given.into()),
        Errno::ISDIR => PathError::Folder(given.into()),
        Errno::NOTDIR => PathError::Io(
            given.into(),
            "a part of the path is a file, not a folder".into(),
        ),
        Errno::NOSYS => PathError::Io(
            given.into(),
            "this kernel has no openat2 (the file tools need Linux 5.6 or later)".into(),
        ),
        other => PathError::Io(given.into(), io::Error::from(other).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let workspace = Workspace::open(&root).unwrap();
        (dir, workspace)
    }

    #[test]
    fn paths_are_read_inside_the_workspace_and_the_ways_out_are_named() {
        let (_dir, ws) = workspace();
        assert_eq!(
            ws.relative("a/./b/../c.txt").unwrap(),
            PathBuf::from("a/c.txt")
        );
        let absolute = ws.root.join("notes/x.md");
        assert_eq!(
            ws.relative(absolute.to_str().unwrap()).unwrap(),
            PathBuf::from("notes/x.md")
        );
        assert_eq!(
            ws.relative("../secret").unwrap_err().to_string(),
            "`../secret` is outside your workspace (`..` climbs above it); give a path relative to it, such as notes/todo.md"
        );
        assert_eq!(
            ws.relative("/etc/shadow").unwrap_err(),
            PathError::Outside("/etc/shadow".into(), "an absolute path elsewhere")
        );
        assert_eq!(ws.relative("  ").unwrap_err(), PathError::Empty);
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_refused_and_one_inside_is_followed() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.txt"), ws.root.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), ws.root.join("up")).unwrap();
        let refused = ws.read_all(Path::new("link"), "link", 100).unwrap_err();
        assert_eq!(
            refused,
            PathError::Outside("link".into(), "a symlink leads out of it")
        );
        let write = ws.write(Path::new("up/planted.txt"), "up/planted.txt", b"x");
        assert_eq!(
            write.unwrap_err(),
            PathError::Outside("up/planted.txt".into(), "a symlink leads out of it")
        );
        assert!(!dir.path().join("planted.txt").exists());
        ws.write(Path::new("real/file.txt"), "real/file.txt", b"inside")
            .unwrap();
        std::os::unix::fs::symlink("real/file.txt", ws.root.join("inner")).unwrap();
        assert_eq!(
            ws.read_all(Path::new("inner"), "inner", 100).unwrap(),
            "inside"
        );
    }

    #[test]
    fn writing_makes_folders_and_says_whether_the_file_is_new() {
        let (_dir, ws) = workspace();
        assert!(
            ws.write(Path::new("a/b/c.txt"), "a/b/c.txt", b"one")
                .unwrap()
        );
        assert!(
            !ws.write(Path::new("a/b/c.txt"), "a/b/c.txt", b"two")
                .unwrap()
        );
        assert_eq!(ws.read_all(Path::new("a/b/c.txt"), "", 10).unwrap(), "two");
        assert_eq!(
            ws.read_all(Path::new("a"), "a", 10).unwrap_err(),
            PathError::Folder("a".into())
        );
        ws.remove(Path::new("a/b/c.txt"), "a/b/c.txt").unwrap();
        assert_eq!(
            ws.read_all(Path::new("a/b/c.txt"), "a/b/c.txt", 10)
                .unwrap_err(),
            PathError::Missing("a/b/c.txt".into())
        );
    }
}
