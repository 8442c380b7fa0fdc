//! `switchboard service install [--user]`: a systemd unit that runs this binary's gateway on
//! this state dir and config, restarts it when it fails, and gives it time to let runs finish
//! when it is stopped (docs/deploy.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};

use crate::settings::GlobalArgs;

#[derive(Subcommand)]
pub enum ServiceCommand {
    /// Write a systemd unit that runs the gateway on this state dir and config: a system unit
    /// (/etc/systemd/system, as root) or with --user a user unit (~/.config/systemd/user).
    Install(InstallArgs),
}

#[derive(Args)]
pub struct InstallArgs {
    /// A user unit, started with your session (or at boot after `loginctl enable-linger`).
    #[arg(long)]
    user: bool,
    /// Print the unit instead of writing it.
    #[arg(long)]
    print: bool,
    /// Write the unit into this directory instead of systemd's.
    #[arg(long, value_name = "DIR")]
    unit_dir: Option<PathBuf>,
    /// The unit's name (NAME.service).
    #[arg(long, default_value = "switchboard")]
    name: String,
}

pub fn run(global: &GlobalArgs, cmd: ServiceCommand) -> Result<ExitCode> {
    let ServiceCommand::Install(args) = cmd;
    let exe = std::env::current_exe().context("finding this binary's path")?;
    let home = absolute(&global.home())?;
    let config = match &global.config {
        Some(file) => Some(absolute(file)?),
        None => None,
    };
    let grace = global.load_config()?.config.gateway.shutdown_grace_seconds;
    let user = match args.user {
        true => None,
        false => std::env::var("SUDO_USER")
            .or_else(|_| std::env::var("USER"))
            .ok(),
    };
    let unit = unit_text(&Unit {
        exe: &exe,
        home: &home,
        config: config.as_deref(),
        user: user.as_deref(),
        grace,
        user_unit: args.user,
    });
    if args.print {
        outln!("{}", unit.trim_end());
        return Ok(ExitCode::SUCCESS);
    }
    let dir = match args.unit_dir {
        Some(dir) => dir,
        None => systemd_dir(args.user)?,
    };
    let path = dir.join(format!("{}.service", args.name));
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, unit))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => anyhow::anyhow!(
                "cannot write {} ({e}): a system unit needs root (sudo), or install a user unit \
                 with --user",
                path.display()
            ),
            _ => anyhow::anyhow!("cannot write {}: {e}", path.display()),
        })?;
    let ctl = if args.user {
        "systemctl --user"
    } else {
        "systemctl"
    };
    outln!("wrote {}", path.display());
    if let Some(made) = state_dir_for(&home)? {
        outln!("{made}");
    }
    outln!(
        "start it now and at every boot:  {ctl} daemon-reload && {ctl} enable --now {}",
        args.name
    );
    outln!(
        "its log:                         journalctl {}-u {} -f",
        if args.user { "--user " } else { "" },
        args.name
    );
    Ok(ExitCode::SUCCESS)
}

/// Makes the state dir (mode 0700) when it does not exist: the unit's user may not be able to
/// make it (`/var/lib/switchboard` under `sudo`), so it is made now and given to the user who
/// ran `sudo` (`SUDO_UID`, `SUDO_GID`). Answers what was done, if anything.
fn state_dir_for(home: &Path) -> Result<Option<String>> {
    use std::os::unix::fs::{DirBuilderExt, chown};
    if home.exists() {
        return Ok(None);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home)
        .with_context(|| format!("making the state dir {}", home.display()))?;
    let id = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let Some(uid) = id("SUDO_UID") else {
        return Ok(Some(format!(
            "made the state dir {} (mode 0700)",
            home.display()
        )));
    };
    chown(home, Some(uid), id("SUDO_GID"))
        .with_context(|| format!("giving the state dir {} to uid {uid}", home.display()))?;
    Ok(Some(format!(
        "made the state dir {} (mode 0700) for uid {uid}, the unit's user",
        home.display()
    )))
}

/// What the unit runs, and as whom.
struct Unit<'a> {
    exe: &'a Path,
    home: &'a Path,
    config: Option<&'a Path>,
    /// The system unit's user (none: root).
    user: Option<&'a str>,
    /// `gateway.shutdownGraceSeconds`: runs may finish for that long after SIGTERM.
    grace: u64,
    user_unit: bool,
}

fn unit_text(unit: &Unit<'_>) -> String {
    let mut exec = vec![arg(&unit.exe.to_string_lossy()), "--state-dir".into()];
    exec.push(arg(&unit.home.to_string_lossy()));
    if let Some(config) = unit.config {
        exec.extend(["--config".into(), arg(&config.to_string_lossy())]);
    }
    exec.push("gateway".into());
    let user = match unit.user {
        Some(user) => format!("User={user}\n"),
        None => String::new(),
    };
    let target = if unit.user_unit {
        "default.target"
    } else {
        "multi-user.target"
    };
    format!(
        "# Written by `switchboard service install` (switchboard {version}); see docs/deploy.md.
[Unit]
Description=switchboard agent-session gateway
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
{user}ExecStart={exec}
Restart=on-failure
RestartSec=2
# After SIGTERM the gateway lets runs finish for gateway.shutdownGraceSeconds ({grace} s), then
# stops them; they resume at its next start.
TimeoutStopSec={stop}
LimitNOFILE=65536
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=full
ProtectKernelTunables=yes
ProtectControlGroups=yes

[Install]
WantedBy={target}
",
        version = env!("CARGO_PKG_VERSION"),
        exec = exec.join(" "),
        grace = unit.grace,
        stop = unit.grace + 15,
    )
}

/// One ExecStart word: quoted when it holds a space, a quote or a backslash.
fn arg(word: &str) -> String {
    if !word.contains([' ', '\t', '"', '\'', '\\']) && !word.is_empty() {
        return word.to_string();
    }
    format!("\"{}\"", word.replace('\\', "\\\\").replace('"', "\\\""))
}

fn systemd_dir(user: bool) -> Result<PathBuf> {
    if !user {
        return Ok(PathBuf::from("/etc/systemd/system"));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")));
    match config {
        Some(config) => Ok(config.join("systemd/user")),
        None => bail!("neither XDG_CONFIG_HOME nor HOME is set: give --unit-dir"),
    }
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("making {} absolute", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_with_spaces_are_quoted_for_systemd() {
        assert_eq!(arg("/usr/bin/switchboard"), "/usr/bin/switchboard");
        assert_eq!(arg("/srv/my state"), "\"/srv/my state\"");
        assert_eq!(arg(r#"a"b"#), r#""a\"b""#);
    }
}
