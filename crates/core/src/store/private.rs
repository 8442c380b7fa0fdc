//! The state dir holds transcripts and the token: only its owner may read it. Directories are
//! made 0700 and files 0600 (on Unix; elsewhere the platform's defaults apply).

use std::fs::{self, OpenOptions};
use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents, owner-only.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Makes an existing path owner-only: 0700 for a directory, 0600 for a file.
pub(crate) fn restrict(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if path.is_dir() { 0o700 } else { 0o600 };
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Options that create a file owner-only.
pub(crate) fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}
