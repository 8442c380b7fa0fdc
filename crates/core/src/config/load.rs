//! From text to a validated [`Config`]: JSON5 → `${ENV}` substitution → typed config (unknown
//! paths collected) → validation.
//!
//! Every stage keeps going after a problem so that one `config check` shows all of them: a value
//! serde rejects is reported and then removed (its default takes its place) before deserialising
//! again, and validation runs on what is left. Problems at a path already reported are dropped.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::error::{self, Seg, render_path};
use super::report;
use super::{Config, ConfigError, ProviderApi, SendAction, validate};

/// A loaded, validated configuration and what was ignored on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    /// The settings, every default filled in.
    pub config: Config,
    /// Dotted paths of keys switchboard does not know (`gateway.prot`, `agents.list[0].colour`),
    /// sorted by key at each level. The gateway warns about each; `config check` treats them as
    /// errors.
    pub unknown_paths: Vec<String>,
    /// The same unknown keys as `config check` reports them, in file order, each with its line
    /// and the closest known key (a [`ConfigError::Unknown`] inside [`ConfigError::At`]).
    pub unknown: Vec<String>,
    /// Where the text came from (a file path, or a description such as "built-in defaults").
    pub origin: String,
}

impl LoadedConfig {
    /// Logs one warning per unknown path (what the gateway does at start-up).
    pub fn warn_unknown_paths(&self) {
        for problem in &self.unknown {
            tracing::warn!(origin = %self.origin, "ignoring unknown config setting: {problem}");
        }
    }
}

/// The process environment, for `${VAR}` substitution.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Reads and loads the config file at `path`. A missing file is an [`ConfigError::Io`] error; use
/// [`load_file_or_default`] where "no file" means "defaults".
pub fn load_file(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    load_str(&text, &path.display().to_string(), env)
}

/// Like [`load_file`], but a file that does not exist yields [`Config::default()`] (SPEC §3: with
/// no file every default applies and the gateway still runs).
pub fn load_file_or_default(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => load_str(&text, &path.display().to_string(), env),
        Err(source) if source.kind() == std::io::ErrorKind::NotFound => Ok(LoadedConfig {
            config: {
                let mut config = Config::default();
                config.store.apply_env(env);
                config.validated()?
            },
            unknown_paths: Vec::new(),
            unknown: Vec::new(),
            origin: format!("built-in defaults ({} not found)", path.display()),
        }),
        Err(source) => Err(ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Loads config text. `origin` names its source in errors; `env` resolves `${VAR}` references
/// (pass [`process_env`] for the real environment).
pub fn load_str(
    text: &str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    load_value(parse_json5(text, origin)?, text, origin, env)
}

/// What a client command needs of the config file: its `gateway` section alone (the port and
/// the token), loaded and checked as [`load_file_or_default`] would. The rest is not read, so a
/// channel's `${TELEGRAM_BOT_TOKEN}` or a provider's key need not be set in a client's shell.
pub fn load_gateway_section(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    load_section(path, env, "gateway")
}

/// The config file's `section` alone, loaded and checked as [`load_file_or_default`] would (the
/// rest keeps its defaults): what the binary reads before the rest, such as `logging` to set
/// up its log before anything is logged.
pub fn load_section(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    section: &str,
) -> Result<LoadedConfig, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(source) if source.kind() == std::io::ErrorKind::NotFound => "{}".to_owned(),
        Err(source) => {
            return Err(ConfigError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let origin = path.display().to_string();
    let mut value = parse_json5(&text, &origin)?;
    if let Value::Object(root) = &mut value {
        root.retain(|key, _| key == section);
    }
    load_value(value, &text, &origin, env)
}

/// [`load_str`] after parsing: `text` is what `value` was parsed from (for line numbers).
fn load_value(
    value: Value,
    text: &str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    if !value.is_object() {
        return Err(ConfigError::WrongType {
            path: render_path(&[]),
            expected: "an object ({ gateway: …, agents: …, … })".to_owned(),
            got: error::describe_value(&value),
        });
    }

    let (config, unknown, mut problems) = read_checked(value, env, env);
    let mut unknown_paths: Vec<String> = Vec::with_capacity(unknown.len());
    let mut unknown_problems = Vec::with_capacity(unknown.len());
    for segs in unknown {
        let path = render_path(&segs);
        if !unknown_paths.contains(&path) {
            unknown_paths.push(path);
            unknown_problems.push(report::unknown(&segs));
        }
    }
    // A file with errors anyway: its unknown keys are listed with them (one may be the cause).
    if !problems.is_empty() {
        problems.append(&mut unknown_problems);
    }
    ConfigError::collect(report::in_file_order(problems, text))?;
    Ok(LoadedConfig {
        config,
        unknown_paths,
        unknown: report::in_file_order(unknown_problems, text)
            .iter()
            .map(ToString::to_string)
            .collect(),
        origin: origin.to_owned(),
    })
}

/// How deeply objects and arrays may nest in a JSON5 text (as serde_json allows JSON): a
/// config is a few levels deep; thousands would overflow the parser's stack.
pub const MAX_DEPTH: usize = 128;

/// Where `text` (JSON5) first nests deeper than [`MAX_DEPTH`]: its 1-based line and column.
/// Strings and comments are skipped; the scan is one pass and allocates nothing.
pub(crate) fn too_deep(text: &str) -> Option<(usize, usize)> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        column += 1;
        if c == '\n' {
            (line, column) = (line + 1, 0);
        }
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
                column += 1;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '/') if chars.peek() == Some(&'/') => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        (line, column) = (line + 1, 0);
                        break;
                    }
                }
            }
            (None, '/') if chars.peek() == Some(&'*') => {
                let mut last = ' ';
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        (line, column) = (line + 1, 0);
                    }
                    if last == '*' && skipped == '/' {
                        break;
                    }
                    last = skipped;
                }
            }
            (None, '{' | '[') => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some((line, column));
                }
            }
            (None, '}' | ']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

pub(super) fn parse_json5(text: &str, origin: &str) -> Result<Value, ConfigError> {
    if let Some((line, column)) = too_deep(text) {
        return Err(ConfigError::Syntax {
            origin: origin.to_owned(),
            line,
            column,
            message: format!(
                "objects and arrays nest more than {MAX_DEPTH} levels deep here; a config needs a few"
            ),
        });
    }
    // A setting written twice is refused, not settled by the last one (SPEC §12).
    let read = json5::from_str::<switchboard_protocol::strict::Unique>(text).map(|u| u.0);
    read.map_err(|err| {
        // End-of-input errors carry no position: they are at the end.
        let position = err
            .position()
            .unwrap_or_else(|| json5::Position::from_offset(text.len(), text));
        let message = match err.code() {
            Some(code) => code
                .to_string()
                .replace("EOF parsing", "unexpected end of file while parsing"),
            None => {
                let full = err.to_string();
                let suffix = format!(" at {position}");
                full.strip_suffix(&suffix).unwrap_or(&full).to_owned()
            }
        };
        let (line, column) = (position.line + 1, position.column + 1);
        // A missing comma is noticed at the next item; it belongs after the previous one.
        if message == "expected comma"
            && let Some((before_line, before_column)) = end_before(text, line, column)
        {
            return ConfigError::Syntax {
                origin: origin.to_owned(),
                line: before_line,
                column: before_column,
                message: format!(
                    "a comma is missing here (the next item starts at line {line}, column \
                     {column})"
                ),
            };
        }
        ConfigError::Syntax {
            origin: origin.to_owned(),
            line,
            column,
            message,
        }
    })
}

/// The 1-based line and column just after the last character before `line:column` that is not
/// blank (where a separator the parser missed belongs).
fn end_before(text: &str, line: usize, column: usize) -> Option<(usize, usize)> {
    let start_of_line: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    let offset = text[start_of_line..]
        .char_indices()
        .nth(column - 1)
        .map_or(text.len(), |(i, _)| start_of_line + i);
    let before = text[..offset].trim_end();
    if before.is_empty() {
        return None;
    }
    let found_line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((found_line, before[line_start..].chars().count() + 1))
}

/// Paths whose value is a secret: a `${VAR}` there that is unset means "not set" rather than an
/// error, so a shared config can mention every key without every key being exported.
const OPTIONAL_SECRETS: &[&str] = &[
    "gateway.auth.token",
    "models.providers.*.apiKey",
    "hooks.token",
    "channels.webhook.accounts.*.token",
    "channels.telegram.botToken",
    "channels.telegram.accounts.*.botToken",
    "channels.discord.botToken",
    "channels.discord.accounts.*.botToken",
    "channels.slack.botToken",
    "channels.slack.appToken",
    "channels.slack.accounts.*.botToken",
    "channels.slack.accounts.*.appToken",
    "channels.whatsapp.accessToken",
    "channels.whatsapp.appSecret",
    "channels.whatsapp.verifyToken",
    "channels.whatsapp.accounts.*.accessToken",
    "channels.whatsapp.accounts.*.appSecret",
    "channels.whatsapp.accounts.*.verifyToken",
    "channels.matrix.accessToken",
    "channels.matrix.password",
    "channels.matrix.accounts.*.accessToken",
    "channels.matrix.accounts.*.password",
];

/// Replaces `${VAR}` in every string value. Secrets naming an unset variable become `null` and are
/// remembered in `unset_secrets` (path → variable) so that a later "required" error can say why.
fn substitute_env(
    value: &mut Value,
    path: &mut Vec<Seg>,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<ConfigError>,
    unset_secrets: &mut BTreeMap<String, String>,
) {
    match value {
        Value::String(text) => match expand(text, env) {
            Ok(Some(expanded)) => *text = expanded,
            Ok(None) => {}
            Err(missing) => {
                let rendered = render_path(path);
                if OPTIONAL_SECRETS.contains(&error::shape(path).as_str()) {
                    unset_secrets.insert(rendered, missing.join(", "));
                    *value = Value::Null;
                } else {
                    problems.extend(missing.into_iter().map(|var| ConfigError::MissingEnv {
                        path: rendered.clone(),
                        var,
                    }));
                }
            }
        },
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                path.push(Seg::Index(index));
                substitute_env(item, path, env, problems, unset_secrets);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                path.push(Seg::Key(key.clone()));
                substitute_env(item, path, env, problems, unset_secrets);
                path.pop();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Expands `${VAR}` references (`VAR` = `[A-Z_][A-Z0-9_]*`, as in the reference system); `$${`
/// is a literal `${`, and anything else — a lone `$`, `${lower}` — is left as written.
/// `Ok(None)`: nothing to expand. `Err`: the variables that are unset or empty.
pub(crate) fn expand(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, Vec<String>> {
    if !text.contains("${") {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len());
    let mut missing = Vec::new();
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let tail = &rest[dollar..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some((name, after)) = tail
            .strip_prefix("${")
            .and_then(|inner| inner.split_once('}'))
            .filter(|(name, _)| is_env_name(name))
        {
            match env(name).filter(|value| !value.is_empty()) {
                Some(value) => out.push_str(&value),
                None => {
                    if !missing.iter().any(|m| m == name) {
                        missing.push(name.to_owned());
                    }
                }
            }
            rest = after;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    if missing.is_empty() {
        Ok(Some(out))
    } else {
        Err(missing)
    }
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Keys that have no sensible default: reported as missing before serde fills in a placeholder.
fn check_required(root: &Value, problems: &mut Vec<ConfigError>) {
    let absent = |object: &serde_json::Map<String, Value>, key: &str| {
        object.get(key).is_none_or(Value::is_null)
    };
    if let Some(providers) = root.pointer("/models/providers").and_then(Value::as_object) {
        for (id, provider) in providers {
            let Some(provider) = provider.as_object() else {
                continue;
            };
            let path = error::push_key("models.providers", id);
            if absent(provider, "api") {
                problems.push(ConfigError::Missing {
                    path: format!("{path}.api"),
                    expected: error::one_of(ProviderApi::NAMES),
                });
            }
            for (index, model) in objects_in(provider.get("models")) {
                if absent(model, "id") {
                    problems.push(ConfigError::Missing {
                        path: format!("{path}.models[{index}].id"),
                        expected: validate::MODEL_ID_EXPECTED.to_owned(),
                    });
                }
            }
        }
    }
    for (index, agent) in objects_in(root.pointer("/agents/list")) {
        if absent(agent, "id") {
            problems.push(ConfigError::Missing {
                path: format!("agents.list[{index}].id"),
                expected: validate::AGENT_ID_EXPECTED.to_owned(),
            });
        }
    }
    for (index, rule) in objects_in(root.pointer("/session/sendPolicy/rules")) {
        if absent(rule, "action") {
            problems.push(ConfigError::Missing {
                path: format!("session.sendPolicy.rules[{index}].action"),
                expected: error::one_of(SendAction::NAMES),
            });
        }
    }
}

/// The objects in the array `value` (if it is one), with their indices.
fn objects_in(value: Option<&Value>) -> Vec<(usize, &serde_json::Map<String, Value>)> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| item.as_object().map(|object| (index, object)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The stages after parsing: `${VAR}` substitution (through `vars`), the reference's
/// spellings, required settings, typed reading (unknown keys collected) and validation; `host`
/// answers the variables the config falls back to (a channel's `DISCORD_BOT_TOKEN`, the store's
/// `SWITCHBOARD_DATABASE_URL`). Answers the config, its unknown keys and every problem.
fn read_checked(
    mut value: Value,
    vars: &dyn Fn(&str) -> Option<String>,
    host: &dyn Fn(&str) -> Option<String>,
) -> (Config, Vec<Vec<Seg>>, Vec<ConfigError>) {
    let mut problems = Vec::new();
    let mut unset_secrets = BTreeMap::new();
    substitute_env(
        &mut value,
        &mut Vec::new(),
        vars,
        &mut problems,
        &mut unset_secrets,
    );
    super::reference::translate(&mut value, host, &mut problems);
    check_required(&value, &mut problems);
    let (mut config, unknown) = deserialize_collecting(value, &mut problems);
    config.store.apply_env(host);
    problems.extend(validate::validate(&mut config, &unset_secrets));
    (config, unknown, problems)
}

/// Every problem the gateway would find in `value`, and its unknown settings, with each
/// `${VAR}` taken as set and nothing from this machine's environment (the import checks a
/// config whose environment is not this one).
pub(super) fn check_value(value: Value) -> (Vec<ConfigError>, Vec<Vec<Seg>>) {
    let set = |_: &str| Some("set".to_owned());
    let (_, unknown, problems) = read_checked(value, &set, &|_| None);
    (problems, unknown)
}

/// Upper bound on serde problems reported from one file (each costs a re-parse).
const MAX_TYPE_PROBLEMS: usize = 100;

/// Deserialises `value`, recording each rejected value as a problem and removing it so the next
/// attempt gets past it. Returns the config and the unknown paths of the attempt that succeeded.
fn deserialize_collecting(
    mut value: Value,
    problems: &mut Vec<ConfigError>,
) -> (Config, Vec<Vec<Seg>>) {
    for _ in 0..MAX_TYPE_PROBLEMS {
        let mut unknown = Vec::new();
        let result = {
            let mut record = |path: serde_ignored::Path<'_>| {
                let mut segs = Vec::new();
                ignored_segs(&path, &mut segs);
                unknown.push(segs);
            };
            let deserializer = serde_ignored::Deserializer::new(&value, &mut record);
            serde_path_to_error::deserialize::<_, Config>(deserializer)
        };
        match result {
            Ok(config) => return (config, unknown),
            Err(err) => {
                let segs = tracked_segs(err.path());
                problems.push(error::from_serde(
                    &segs,
                    &err.inner().to_string(),
                    error::value_at(&value, &segs),
                    validate::expected_at(&segs),
                ));
                if !remove_at(&mut value, &segs) {
                    break;
                }
            }
        }
    }
    (Config::default(), Vec::new())
}

fn tracked_segs(path: &serde_path_to_error::Path) -> Vec<Seg> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(Seg::Index(*index)),
            Segment::Map { key } => Some(Seg::Key(key.clone())),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect()
}

fn ignored_segs(path: &serde_ignored::Path<'_>, out: &mut Vec<Seg>) {
    use serde_ignored::Path;
    match path {
        Path::Root => {}
        Path::Seq { parent, index } => {
            ignored_segs(parent, out);
            out.push(Seg::Index(*index));
        }
        Path::Map { parent, key } => {
            ignored_segs(parent, out);
            out.push(Seg::Key(key.clone()));
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => {
            ignored_segs(parent, out);
        }
    }
}

/// The value at `segs`, to change it.
pub(super) fn value_at_mut<'v>(root: &'v mut Value, segs: &[Seg]) -> Option<&'v mut Value> {
    segs.iter().try_fold(root, |value, seg| match seg {
        Seg::Key(k) => value.get_mut(k.as_str()),
        Seg::Index(i) => value.get_mut(*i),
    })
}

/// Removes the object entry that holds the value at `segs` so its default applies. A bad array
/// element takes its whole array with it: removing only the element would renumber its siblings
/// and make later paths wrong. `false` when there is nothing removable (the error is at the top).
pub(super) fn remove_at(root: &mut Value, segs: &[Seg]) -> bool {
    let keep = segs
        .iter()
        .rposition(|seg| matches!(seg, Seg::Key(_)))
        .map_or(0, |last_key| last_key + 1);
    let Some((Seg::Key(key), parent_segs)) = segs[..keep].split_last() else {
        return false;
    };
    value_at_mut(root, parent_segs)
        .and_then(Value::as_object_mut)
        .is_some_and(|object| object.remove(key).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME_DIR" => Some("/home/a".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expand_substitutes_escapes_and_leaves_the_rest() {
        assert_eq!(expand("plain", &env), Ok(None));
        assert_eq!(
            expand("${HOME_DIR}/x", &env),
            Ok(Some("/home/a/x".to_owned()))
        );
        assert_eq!(
            expand("a${HOME_DIR}b${HOME_DIR}", &env),
            Ok(Some("a/home/ab/home/a".to_owned()))
        );
        assert_eq!(
            expand("$${HOME_DIR}", &env),
            Ok(Some("${HOME_DIR}".to_owned()))
        );
        assert_eq!(
            expand("$$${HOME_DIR}", &env),
            Ok(Some("$${HOME_DIR}".to_owned()))
        );
        assert_eq!(
            expand("cost $5 ${lower} ${", &env),
            Ok(Some("cost $5 ${lower} ${".to_owned()))
        );
        assert_eq!(
            expand("${NOPE}${EMPTY}${NOPE}", &env),
            Err(vec!["NOPE".to_owned(), "EMPTY".to_owned()])
        );
    }

    #[test]
    fn nesting_beyond_the_limit_is_an_error_not_a_crash() {
        let deep = format!("{}1{}", "{a:".repeat(20_000), "}".repeat(20_000));
        let e = load_str(&deep, "deep.json5", &env).unwrap_err().to_string();
        assert!(
            e.starts_with("config syntax error in deep.json5 at line 1, column 385: objects and arrays nest more than 128 levels"),
            "{e}"
        );
        // Brackets in strings and comments do not count; 128 levels are fine.
        let text = format!(
            "// {{{{{{ [[[ \n{{ s: \"{{{{[[\", t: '}}}}', /* {{{{ */ x: {}1{} }}",
            "[".repeat(126),
            "]".repeat(126)
        );
        assert_eq!(too_deep(&text), None, "{text}");
        assert!(load_str(&text, "ok.json5", &env).is_ok());
    }

    #[test]
    fn remove_at_drops_the_key_or_the_whole_array() {
        let mut value = serde_json::json!({ "a": { "b": 1, "c": [1, { "d": 2 }] } });
        assert!(remove_at(
            &mut value,
            &[
                Seg::Key("a".into()),
                Seg::Key("c".into()),
                Seg::Index(1),
                Seg::Key("d".into())
            ]
        ));
        assert_eq!(value, serde_json::json!({ "a": { "b": 1, "c": [1, {}] } }));
        assert!(remove_at(
            &mut value,
            &[Seg::Key("a".into()), Seg::Key("c".into()), Seg::Index(0)]
        ));
        assert_eq!(value, serde_json::json!({ "a": { "b": 1 } }));
        assert!(!remove_at(&mut value, &[]));
        assert!(!remove_at(&mut value, &[Seg::Key("zzz".into())]));
    }

    proptest::proptest! {
        #[test]
        fn expand_without_references_is_identity(text in "[a-z ${}]{0,40}") {
            let expanded = expand(&text, &|_| None);
            // Only a `${NAME}` with an upper-case name is a reference; none can occur here.
            let expected = if text.contains("${") {
                Some(text.replace("$${", "\u{0}").replace('\u{0}', "${"))
            } else {
                None
            };
            proptest::prop_assert_eq!(expanded, Ok(expected));
        }
    }

    /// Config-shaped JSON: the real section and field names with arbitrary values in them.
    fn config_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        const KEYS: &[&str] = &[
            "gateway",
            "port",
            "bind",
            "auth",
            "mode",
            "token",
            "agents",
            "defaults",
            "list",
            "id",
            "default",
            "model",
            "primary",
            "fallbacks",
            "session",
            "scope",
            "dmScope",
            "mainKey",
            "sendPolicy",
            "rules",
            "action",
            "match",
            "agentToAgent",
            "maxPingPongTurns",
            "models",
            "providers",
            "api",
            "baseUrl",
            "apiKey",
            "channels",
            "webhook",
            "accounts",
            "tools",
            "allow",
            "deny",
            "subagents",
            "sandbox",
            "cron",
            "hooks",
            "timeoutSeconds",
            "maxConcurrent",
            "systemPrompt",
            "contextWindow",
            "maxPayloadBytes",
        ];
        switchboard_testkit::fuzz::json(KEYS, &["${HOME}", "local/m", "*", "token"], 5)
    }

    proptest::proptest! {
        /// Whatever a config file holds, loading it answers a config or an error that names
        /// where the problem is and what is accepted; it never panics.
        #[test]
        fn any_config_loads_or_says_what_is_wrong(value in config_value(), noise in ".{0,40}") {
            for text in [value.to_string(), noise] {
                if let Err(e) = load_str(&text, "config.json5", &|_| None) {
                    let message = e.to_string();
                    proptest::prop_assert!(
                        message.contains("config error at") || message.contains("config syntax error"),
                        "{message}"
                    );
                }
            }
        }
    }
}
