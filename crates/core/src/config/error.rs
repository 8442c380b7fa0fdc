//! [`ConfigError`] and the small path/value vocabulary every config error is written in: a dotted
//! path (`agents.list[0].sandbox.mode`), the offending value as the user wrote it, and what is
//! accepted instead.

use std::path::PathBuf;

use serde_json::Value;

/// Why a configuration could not be loaded. Returned by [`super::load_file`],
/// [`super::load_str`] and [`super::Config::validated`]; the gateway refuses to start on any of
/// them, and `switchboard config check` prints them. Every variant names where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read. Show the path; a missing file is not an error for callers that
    /// use [`super::load_file_or_default`].
    #[error("cannot read config file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The text is not JSON5. Line and column are 1-based.
    #[error("config syntax error in {origin} at line {line}, column {column}: {message}")]
    Syntax {
        /// The file (or other source) the text came from.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// A string refers to `${VAR}` and `VAR` is unset or empty. Export it, or write `$${` for a
    /// literal `${`.
    #[error("config error at {path}: environment variable {var} is not set (or is empty)")]
    MissingEnv {
        /// Where the reference is.
        path: String,
        /// The variable's name.
        var: String,
    },
    /// A value of the right type that is not accepted here.
    #[error("config error at {path}: {value} is not allowed; expected {allowed}")]
    Invalid {
        /// Where the value is.
        path: String,
        /// The value as written (strings quoted).
        value: String,
        /// What is accepted.
        allowed: String,
    },
    /// A value of the wrong type (a string where a number belongs, …).
    #[error("config error at {path}: expected {expected}, got {got}")]
    WrongType {
        /// Where the value is.
        path: String,
        /// What is accepted.
        expected: String,
        /// The value as written (strings quoted; objects and arrays named).
        got: String,
    },
    /// A required setting is absent.
    #[error("config error at {path}: missing; expected {expected}")]
    Missing {
        /// Where the setting belongs.
        path: String,
        /// What to put there.
        expected: String,
    },
    /// A key switchboard does not know (ignored by the gateway, an error for `config check`
    /// and whenever the file has errors anyway), with the closest known key.
    #[error(
        "config error at {path}: unknown setting{}",
        .suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default()
    )]
    Unknown {
        /// Where the key is.
        path: String,
        /// The closest known key at the same place, when one is close.
        suggestion: Option<String>,
    },
    /// A setting of the reference (OpenClaw) that switchboard does not honour, with what to do
    /// instead (docs/moving-from-openclaw.md).
    #[error("config error at {path}: the reference's setting has no counterpart here: {instead}")]
    NoCounterpart {
        /// Where the setting is.
        path: String,
        /// Why, and what to use or do instead.
        instead: String,
    },
    /// A problem and the line of the file it stands at (1-based).
    #[error("line {line}: {error}")]
    At {
        line: usize,
        error: Box<ConfigError>,
    },
    /// Several of the above, one per line, in the order they stand in the file.
    #[error("{}", join_lines(.0))]
    Many(Vec<ConfigError>),
}

fn join_lines(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl ConfigError {
    /// The dotted config path the error is about, if it is about one.
    pub fn path(&self) -> Option<&str> {
        match self {
            ConfigError::MissingEnv { path, .. }
            | ConfigError::Invalid { path, .. }
            | ConfigError::WrongType { path, .. }
            | ConfigError::Missing { path, .. }
            | ConfigError::Unknown { path, .. }
            | ConfigError::NoCounterpart { path, .. } => Some(path),
            ConfigError::At { error, .. } => error.path(),
            ConfigError::Io { .. } | ConfigError::Syntax { .. } | ConfigError::Many(_) => None,
        }
    }

    /// Each single problem: the members of [`ConfigError::Many`], or the error itself (without
    /// the line it stands at: see [`ConfigError::line`]).
    pub fn problems(&self) -> Vec<&ConfigError> {
        match self {
            ConfigError::Many(all) => all.iter().flat_map(ConfigError::problems).collect(),
            ConfigError::At { error, .. } => error.problems(),
            single => vec![single],
        }
    }

    /// The line of the file the problem stands at, when it was found.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::At { line, .. } => Some(*line),
            ConfigError::Syntax { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// `Ok` for no problems, the problem itself for one, [`ConfigError::Many`] for more. Later
    /// problems at a path already reported are dropped: one cause, one line.
    pub(crate) fn collect(problems: Vec<ConfigError>) -> Result<(), ConfigError> {
        let mut kept: Vec<ConfigError> = Vec::with_capacity(problems.len());
        for problem in problems {
            // Several unset variables in one string are several problems at one path.
            let is_env = |e: &ConfigError| {
                matches!(e.problems().first(), Some(ConfigError::MissingEnv { .. }))
            };
            let duplicate = problem.path().is_some_and(|path| {
                kept.iter()
                    .any(|k| k.path() == Some(path) && !(is_env(k) && is_env(&problem)))
            });
            if !duplicate {
                kept.push(problem);
            }
        }
        match kept.len() {
            0 => Ok(()),
            1 => Err(kept.remove(0)),
            _ => Err(ConfigError::Many(kept)),
        }
    }
}

/// One step of a config path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// `a.b[0].c`; keys that are not plain identifiers are quoted: `models.providers["eu.openai"]`.
pub(crate) fn render_path(segs: &[Seg]) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Key(key) => out = push_key(&out, key),
            Seg::Index(index) => out = push_index(&out, *index),
        }
    }
    if out.is_empty() {
        out.push_str("(top level)");
    }
    out
}

/// `parent.key`, or `parent["odd key"]` when the key is not a plain identifier.
pub(crate) fn push_key(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, parent.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{parent}.{key}"),
        (false, _) => format!("{parent}[{}]", quote(key)),
    }
}

/// The segments of a path [`render_path`] wrote: `a.b[0].c`, `models.providers["eu.openai"]`.
pub(crate) fn parse_path(path: &str) -> Vec<Seg> {
    let mut segs = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('[') {
            let Some(end) = closing_bracket(inner) else {
                break;
            };
            let token = &inner[..end];
            segs.push(match token.parse::<usize>() {
                Ok(index) => Seg::Index(index),
                Err(_) => Seg::Key(serde_json::from_str(token).unwrap_or_else(|_| token.into())),
            });
            rest = &inner[end + 1..];
        } else {
            let body = rest.strip_prefix('.').unwrap_or(rest);
            let end = body.find(['.', '[']).unwrap_or(body.len());
            segs.push(Seg::Key(body[..end].to_owned()));
            rest = &body[end..];
        }
    }
    segs
}

/// Where the `]` that closes a bracket segment is (a quoted key may hold `]`).
fn closing_bracket(inner: &str) -> Option<usize> {
    if !inner.starts_with('"') {
        return inner.find(']');
    }
    let mut escaped = false;
    for (i, c) in inner.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return inner[i..].find(']').map(|j| i + j),
            _ => {}
        }
    }
    None
}

/// `parent[index]`.
pub(crate) fn push_index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// The path with user-chosen map keys replaced by `*` and indices by `[]`, e.g.
/// `models.providers.*.models[].id`: the form the rules about a setting are keyed by.
pub(crate) fn shape(segs: &[Seg]) -> String {
    const USER_MAPS: &[&str] = &[
        "models.providers",
        "models.providers.*.headers",
        "channels.webhook.accounts",
    ];
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Index(_) => out.push_str("[]"),
            Seg::Key(key) => {
                let key = if USER_MAPS.contains(&out.as_str()) {
                    "*"
                } else {
                    key.as_str()
                };
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
        }
    }
    out
}

/// The JSON value at `segs`, if there is one.
pub(crate) fn value_at<'a>(root: &'a Value, segs: &[Seg]) -> Option<&'a Value> {
    segs.iter().try_fold(root, |value, seg| match seg {
        Seg::Key(key) => value.get(key.as_str()),
        Seg::Index(index) => value.get(*index),
    })
}

/// A string in double quotes, JSON-escaped.
pub(crate) fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

/// A value the way an error shows it: scalars as written (long strings shortened), containers by
/// kind.
pub(crate) fn describe_value(value: &Value) -> String {
    const MAX_CHARS: usize = 60;
    match value {
        Value::String(text) if text.chars().count() > MAX_CHARS => {
            let head: String = text.chars().take(MAX_CHARS).collect();
            format!("{}…", quote(&head))
        }
        Value::String(text) => quote(text),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        scalar => scalar.to_string(),
    }
}

/// `one of "a", "b", "c"`.
pub(crate) fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| quote(name)).collect();
    format!("one of {}", quoted.join(", "))
}

/// Turns a serde message (`invalid type: string "abc", expected u16`) into a [`ConfigError`] at
/// `segs`, preferring `expected` (what the setting accepts, from the validation rules) over serde's
/// type names.
pub(crate) fn from_serde(
    segs: &[Seg],
    message: &str,
    value: Option<&Value>,
    expected: Option<String>,
) -> ConfigError {
    let path = render_path(segs);
    let got = value.map(describe_value);
    let serde_expected = message
        .split_once(", expected ")
        .map(|(_, rest)| humanize_expected(rest));
    let expected = expected
        .or(serde_expected)
        .unwrap_or_else(|| message.replace('`', "\""));

    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return ConfigError::Missing {
            path: push_key(&path, field),
            expected: "a value".to_owned(),
        };
    }
    if message.starts_with("invalid type") {
        let got = got.unwrap_or_else(|| between(message, ": ", ", expected"));
        return ConfigError::WrongType {
            path,
            expected,
            got,
        };
    }
    let value = got.unwrap_or_else(|| between(message, ": ", ", expected"));
    ConfigError::Invalid {
        path,
        value,
        allowed: expected,
    }
}

fn between(message: &str, start: &str, end: &str) -> String {
    let rest = message.split_once(start).map_or(message, |(_, rest)| rest);
    let inner = rest.split_once(end).map_or(rest, |(inner, _)| inner);
    inner.replace('`', "")
}

/// serde's names for what it wanted, in words a config author knows.
fn humanize_expected(serde_expected: &str) -> String {
    match serde_expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a non-negative integer".to_owned(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a map" => "an object".to_owned(),
        other if other.starts_with("struct ") => "an object".to_owned(),
        other => other.replace('`', "\""),
    }
}
