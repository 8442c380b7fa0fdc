//! The config half of `switchboard import openclaw` (SPEC §11a): the reference's
//! `openclaw.json` — JSON5, its `$include`s resolved, `${VAR}` kept as written — becomes a
//! switchboard config. Every setting with a counterpart is carried over in switchboard's
//! spelling; every other one is left out and listed with why, as `config check` would say it
//! (one checker decides both: [`super::reference`], then the loader's own checks).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::ConfigError;
use super::error::{Seg, parse_path, render_path};
use super::load::{check_value, parse_json5, remove_at, value_at_mut};

/// The reference's top-level sections switchboard has (`commands` gives the channels' owners).
const SECTIONS: &[&str] = &[
    "gateway", "models", "agents", "session", "tools", "channels", "hooks", "cron", "logging",
    "commands",
];

/// How deep `$include`s may nest (as in the reference).
const MAX_INCLUDE_DEPTH: usize = 10;

/// The checks run again after each round of removals, at most this often.
const MAX_ROUNDS: usize = 32;

/// A reference config read as switchboard's.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedConfig {
    /// The config to write (switchboard's spellings; `${VAR}` as the reference wrote it).
    pub value: Value,
    /// Each setting not carried over, in the reference's spelling of its path, with why.
    pub left_out: Vec<LeftOut>,
}

/// A setting of the reference's config that was not carried over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub path: String,
    pub why: String,
}

/// Reads the reference's config file at `path` as switchboard's.
pub fn import_reference(path: &Path) -> Result<ImportedConfig, ConfigError> {
    let mut value = read(path)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    resolve_includes(&mut value, &dir, 0)?;
    let mut left_out = Vec::new();
    if let Value::Object(root) = &mut value {
        root.retain(|key, _| {
            let kept = SECTIONS.contains(&key.as_str());
            if !kept {
                left_out.push(LeftOut {
                    path: key.clone(),
                    why: "the reference's section has no counterpart in switchboard".into(),
                });
            }
            kept
        });
    }
    let web = started_as_the_reference_does(&mut value);
    let mut problems = Vec::new();
    super::reference::translate(&mut value, &|_| None, &mut problems);
    left_out.extend(problems.iter().map(left_out_of));
    settle(&mut value, &mut left_out);
    if web {
        left_out.push(LeftOut {
            path: "channels.whatsapp".into(),
            why: "WhatsApp Web pairing has no counterpart: switchboard uses the WhatsApp Business Cloud API; add phoneNumberId, accessToken, appSecret and verifyToken (docs/channels/whatsapp.md)".into(),
        });
    }
    Ok(ImportedConfig { value, left_out })
}

/// The reference runs a chat channel whose section is there unless it says `enabled: false`;
/// here a section runs when it says `enabled: true`: written so. Answers whether the reference
/// ran WhatsApp (through WhatsApp Web, which has no counterpart).
fn started_as_the_reference_does(value: &mut Value) -> bool {
    let mut web = false;
    for channel in super::reference::CHANNELS {
        let Some(section) = value["channels"]
            .get_mut(channel)
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let on = section.entry("enabled").or_insert(Value::Bool(true));
        web |= channel == "whatsapp" && *on == Value::Bool(true);
    }
    web
}

/// Checks `value` as the gateway would and removes what is refused or unknown, until it loads.
fn settle(value: &mut Value, left_out: &mut Vec<LeftOut>) {
    for _ in 0..MAX_ROUNDS {
        let (problems, unknown) = check_value(value.clone());
        let mut removed = false;
        for problem in &problems {
            let segs = problem.path().map(parse_path).unwrap_or_default();
            if !segs.is_empty() && remove_at(value, &segs) {
                removed = true;
                left_out.push(left_out_of(problem));
            } else if let Some(off) = turn_off(value, &segs) {
                // A setting the channel needs here is missing (WhatsApp's Cloud API ones, say):
                // the channel comes over off, with what to add.
                removed = true;
                let missing = left_out_of(problem);
                let why = format!("turned off: {}: {}", missing.path, missing.why);
                left_out.push(LeftOut { path: off, why });
            }
        }
        for segs in unknown {
            if remove_at(value, &segs) {
                removed = true;
                left_out.push(LeftOut {
                    path: render_path(&segs),
                    why: "switchboard has no such setting".into(),
                });
            }
        }
        if !removed {
            return;
        }
    }
}

/// Turns off the channel (or the channel's account) a problem at `segs` is in, if it is on:
/// the path of its `enabled`.
fn turn_off(value: &mut Value, segs: &[Seg]) -> Option<String> {
    let (Some(Seg::Key(top)), Some(Seg::Key(channel))) = (segs.first(), segs.get(1)) else {
        return None;
    };
    if top != "channels" {
        return None;
    }
    let mut at = vec![Seg::Key(top.clone()), Seg::Key(channel.clone())];
    if let (Some(Seg::Key(accounts)), Some(Seg::Key(id))) = (segs.get(2), segs.get(3))
        && accounts == "accounts"
    {
        at.extend([Seg::Key(accounts.clone()), Seg::Key(id.clone())]);
    }
    let section = value_at_mut(value, &at)?.as_object_mut()?;
    if section.get("enabled") == Some(&Value::Bool(false)) {
        return None;
    }
    section.insert("enabled".into(), Value::Bool(false));
    at.push(Seg::Key("enabled".into()));
    Some(render_path(&at))
}

fn left_out_of(problem: &ConfigError) -> LeftOut {
    let path = problem.path().unwrap_or_default().to_owned();
    let text = problem.to_string();
    let why = text
        .strip_prefix(&format!("config error at {path}: "))
        .unwrap_or(&text)
        .to_owned();
    LeftOut { path, why }
}

fn read(path: &Path) -> Result<Value, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_json5(&text, &path.display().to_string())
}

/// Resolves the reference's `$include` (a file or a list of files, relative to the including
/// file's folder and inside the config's folder): the files' objects deep-merged in order,
/// then the object's other keys over them.
fn resolve_includes(value: &mut Value, dir: &Path, depth: usize) -> Result<(), ConfigError> {
    match value {
        Value::Object(map) => {
            if let Some(include) = map.remove("$include") {
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(include_error(
                        dir,
                        "$include nests more than 10 levels deep",
                    ));
                }
                let mut merged = Value::Object(Map::new());
                for file in include_paths(&include, dir)? {
                    let mut included = read(&file)?;
                    let folder = file.parent().map(Path::to_path_buf).unwrap_or_default();
                    resolve_includes(&mut included, &folder, depth + 1)?;
                    merge(&mut merged, included);
                }
                let siblings = std::mem::take(map);
                merge(&mut merged, Value::Object(siblings));
                *value = merged;
            }
            if let Value::Object(map) = value {
                for item in map.values_mut() {
                    resolve_includes(item, dir, depth)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|item| resolve_includes(item, dir, depth)),
        _ => Ok(()),
    }
}

fn include_paths(include: &Value, dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let names: Vec<&str> = match include {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => {
            return Err(include_error(
                dir,
                "$include is a file name or a list of them",
            ));
        }
    };
    Ok(names.iter().map(|name| dir.join(name)).collect())
}

fn include_error(dir: &Path, why: &str) -> ConfigError {
    ConfigError::Invalid {
        path: "$include".into(),
        value: format!("an include in {}", dir.display()),
        allowed: why.into(),
    }
}

/// Deep-merges `over` into `base`: objects key by key, anything else replaced.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}
