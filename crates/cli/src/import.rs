//! `switchboard import openclaw [--from DIR] [--dry-run]` (SPEC §11a, docs/moving-from-openclaw.md):
//! the reference's state dir moved into this one. The config is read as switchboard's
//! (`config::import_reference`); what is left out is listed with why.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use switchboard_core::clock::{Clock, SystemClock};
use switchboard_core::config::{self, ImportedConfig};
use switchboard_core::import::{ImportReport, import_sessions};
use switchboard_core::store::{self, Store};

use crate::settings::GlobalArgs;

#[derive(Subcommand)]
pub enum ImportCommand {
    /// Move in from the reference (OpenClaw): its config, sessions and transcripts.
    Openclaw(OpenclawArgs),
}

#[derive(Args)]
pub struct OpenclawArgs {
    /// The reference's state dir (default: $OPENCLAW_STATE_DIR, else ~/.openclaw).
    #[arg(long, value_name = "DIR")]
    from: Option<PathBuf>,
    /// Print what would be carried over and what would not, and write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// The first line of a config this command wrote: a later import may replace such a file.
const WRITTEN_BY: &str = "// Written by `switchboard import openclaw` from ";

pub async fn run(global: &GlobalArgs, command: ImportCommand) -> Result<ExitCode> {
    let ImportCommand::Openclaw(args) = command;
    let from = args.from.clone().unwrap_or_else(reference_home);
    if !from.is_dir() {
        anyhow::bail!(
            "{} is not a folder: name the reference's state dir with --from DIR",
            from.display()
        );
    }
    let source = reference_config(&from);
    let imported = match source.exists() {
        true => Some(config::import_reference(&source).map_err(|e| anyhow::anyhow!("{e}"))?),
        false => None,
    };
    let home = global.home();
    // A dry run only reads, beside a running gateway if need be.
    let _lock = match args.dry_run {
        true => None,
        false => Some(crate::state_lock::take_to_write(
            &home,
            "switchboard import",
        )?),
    };
    let target = match &imported {
        Some(imported) if !args.dry_run => Some(write_config(&home, &source, imported)?),
        _ => None,
    };
    report(
        &from,
        &source,
        imported.as_ref(),
        target.as_deref(),
        args.dry_run,
    );
    // A dry run writes nothing: with no state dir yet, it compares against an empty store of
    // its own, removed after.
    let scratch = (args.dry_run && !home.exists())
        .then(|| std::env::temp_dir().join(format!("switchboard-import-{}", std::process::id())));
    let store = open_store(global, scratch.as_deref().unwrap_or(&home)).await?;
    let sessions = import_sessions(&from, &store, args.dry_run).await;
    store.close().await;
    if let Some(scratch) = scratch {
        let _ = std::fs::remove_dir_all(scratch);
    }
    report_sessions(&sessions?, args.dry_run);
    Ok(ExitCode::SUCCESS)
}

/// The store this state dir's config names (only its `store` section is read: the rest may
/// name variables this shell does not set).
async fn open_store(global: &GlobalArgs, home: &Path) -> Result<Arc<dyn Store>> {
    let path = global
        .config
        .clone()
        .unwrap_or_else(|| home.join("config.json5"));
    let loaded = config::load_section(&path, &config::process_env, "store")
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    store::open(home, &loaded.config.store, clock)
        .await
        .map_err(|e| anyhow::anyhow!("opening the store: {e}"))
}

fn report_sessions(sessions: &ImportReport, dry_run: bool) {
    let verb = match dry_run {
        true => "would be imported",
        false => "imported",
    };
    outln!(
        "sessions: {} {verb} ({} messages); {} already here, left as they are",
        sessions.imported.len(),
        sessions.messages,
        sessions.present.len()
    );
    for key in &sessions.imported {
        outln!("  {key}");
    }
    let groups = [
        ("cron jobs", &sessions.cron_jobs, sessions.cron_present),
        (
            "senders let in by pairing",
            &sessions.paired,
            sessions.paired_present,
        ),
    ];
    for (what, written, present) in groups {
        outln!("{what}: {} {verb}; {present} already here", written.len());
        for one in written {
            outln!("  {one}");
        }
    }
    for left in &sessions.left_out {
        outln!("  not carried over: {left}");
    }
}

/// `$OPENCLAW_STATE_DIR`, else `~/.openclaw`.
fn reference_home() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPENCLAW_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    base.join(".openclaw")
}

/// `$OPENCLAW_CONFIG_PATH`, else `<from>/openclaw.json`.
fn reference_config(from: &Path) -> PathBuf {
    match std::env::var_os("OPENCLAW_CONFIG_PATH").filter(|p| !p.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => from.join("openclaw.json"),
    }
}

/// Writes the config: `config.json5` when there is none or an import wrote it, else
/// `config.openclaw.json5` beside the user's own (to compare, never overwritten).
fn write_config(home: &Path, source: &Path, imported: &ImportedConfig) -> Result<PathBuf> {
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    let own = home.join("config.json5");
    let ours = match std::fs::read_to_string(&own) {
        Ok(text) if !text.starts_with(WRITTEN_BY) => home.join("config.openclaw.json5"),
        _ => own,
    };
    let body = serde_json::to_string_pretty(&imported.value)?;
    let text = format!("{WRITTEN_BY}{}\n{body}\n", source.display());
    write_private(&ours, &text)?;
    Ok(ours)
}

/// The config holds the reference's tokens: readable by its owner only.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

fn report(
    from: &Path,
    source: &Path,
    imported: Option<&ImportedConfig>,
    target: Option<&Path>,
    dry_run: bool,
) {
    outln!("Importing the reference's state dir {}", from.display());
    let Some(imported) = imported else {
        outln!(
            "config: {} not found; no config carried over",
            source.display()
        );
        return;
    };
    let sections = imported.value.as_object().map_or(0, |root| root.len());
    match (target, dry_run) {
        (Some(target), _) => outln!(
            "config: {sections} sections carried over into {}",
            target.display()
        ),
        (None, _) => outln!("config: {sections} sections would be carried over (dry run)"),
    }
    if imported.left_out.is_empty() {
        outln!("Every setting was carried over.");
        return;
    }
    outln!("Not carried over ({}), with why:", imported.left_out.len());
    for left in &imported.left_out {
        outln!("  {}: {}", left.path, left.why);
    }
}
