//! How config problems are reported: in the order they stand in the file (each with its line),
//! and unknown keys with the closest known key ("did you mean `port`?").

use serde_json::Value;

use super::error::{Seg, render_path};
use super::{AgentEntry, Config, ConfigError, ModelEntry, ProviderConfig, SendPolicyRule};
use super::{WebhookAccount, error};

/// The problems, each with the line it stands at, in file order (those whose line cannot be
/// found last, in the order they were found).
pub(crate) fn in_file_order(problems: Vec<ConfigError>, text: &str) -> Vec<ConfigError> {
    let mut placed: Vec<(usize, ConfigError)> = problems
        .into_iter()
        .map(
            |problem| match problem.segs().and_then(|s| nearest_line(text, &s)) {
                Some(line) => (
                    line,
                    ConfigError::At {
                        line,
                        error: Box::new(problem),
                    },
                ),
                None => (usize::MAX, problem),
            },
        )
        .collect();
    placed.sort_by_key(|(line, _)| *line);
    placed.into_iter().map(|(_, problem)| problem).collect()
}

/// An unknown key, with the closest known key at the same place when one is close enough.
pub(crate) fn unknown(segs: &[Seg]) -> ConfigError {
    let suggestion = match segs.split_last() {
        Some((Seg::Key(key), parent)) => closest(key, &known_keys(parent)),
        _ => None,
    };
    ConfigError::Unknown {
        path: render_path(segs),
        suggestion,
    }
}

/// The line of the value at `segs`, else of the closest parent that is written (a missing
/// setting is reported where its object is).
fn nearest_line(text: &str, segs: &[Seg]) -> Option<usize> {
    (1..=segs.len())
        .rev()
        .find_map(|n| line_of(text, &segs[..n]))
}

/// The 1-based line of the value at `segs`: each key is looked for after the previous one, and
/// an array index moves to that element of the array.
fn line_of(text: &str, segs: &[Seg]) -> Option<usize> {
    let mut offset = 0;
    let mut found = None;
    for seg in segs {
        let at = match seg {
            Seg::Key(key) => offset + find_key(&text[offset..], key)?,
            Seg::Index(i) => offset + element(&text[offset..], *i)?,
        };
        // Past the first character found (a key may start with a multi-byte one).
        offset = at + text[at..].chars().next().map_or(1, char::len_utf8);
        found = Some(at);
    }
    found.map(|at| text[..at].matches('\n').count() + 1)
}

/// Where element `index` of the first array in `text` starts (strings and nesting skipped).
fn element(text: &str, index: usize) -> Option<usize> {
    let open = text.find('[')?;
    let (mut depth, mut commas, mut quote) = (0usize, 0usize, None);
    let mut escaped = false;
    for (i, c) in text[open..].char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        let starts = depth == 1 && commas == index && i > 0;
        if starts && !c.is_whitespace() && c != ',' && c != ']' {
            return Some(open + i);
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '{' => depth += 1,
            ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
            }
            ',' if depth == 1 => commas += 1,
            _ => {}
        }
    }
    None
}

/// Where `key` stands as an object key in `text`: bare or quoted, followed by `:`. The empty
/// key (`"": …`) is found everywhere and nowhere: it has no place (its parent's line is
/// used), and looking for it would never move on.
fn find_key(text: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut from = 0;
    while let Some(pos) = text[from..].find(key) {
        let at = from + pos;
        let before = text[..at].chars().next_back();
        let after = text[at + key.len()..].trim_start_matches(['"', '\'']);
        if !before.is_some_and(is_word) && after.trim_start().starts_with(':') {
            return Some(at);
        }
        from = at + key.len();
    }
    None
}

/// The keys an object at `parent` may have: the fields of the config type there.
fn known_keys(parent: &[Seg]) -> Vec<String> {
    static TEMPLATE: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let mut node = TEMPLATE.get_or_init(template);
    for seg in parent {
        node = match (seg, node) {
            (Seg::Key(key), Value::Object(map)) => map.get(key).or_else(|| map.get("*")),
            (Seg::Index(_), Value::Array(items)) => items.first(),
            _ => None,
        }
        .unwrap_or(&Value::Null);
    }
    match node {
        Value::Object(map) => map.keys().filter(|k| *k != "*").cloned().collect(),
        _ => Vec::new(),
    }
}

/// The default config with one entry in each keyed map and list of objects (under `*` and at
/// index 0), so the fields of their entries are known too.
fn template() -> Value {
    let mut config = Config::default();
    let mut provider = ProviderConfig::default();
    provider.models.push(ModelEntry::default());
    config.models.providers.insert("*".into(), provider);
    config.agents.list.push(AgentEntry::default());
    let channels = &mut config.channels;
    channels
        .webhook
        .accounts
        .insert("*".into(), WebhookAccount::default());
    channels.telegram = std::mem::take(&mut channels.telegram).template();
    channels.discord = std::mem::take(&mut channels.discord).template();
    channels.slack = std::mem::take(&mut channels.slack).template();
    channels.whatsapp = std::mem::take(&mut channels.whatsapp).template();
    channels.matrix = std::mem::take(&mut channels.matrix).template();
    config
        .session
        .send_policy
        .rules
        .push(SendPolicyRule::default());
    serde_json::to_value(config).unwrap_or(Value::Null)
}

/// The known key closest to `key`, if it is close (the one rule of every door's "did you mean").
fn closest(key: &str, known: &[String]) -> Option<String> {
    switchboard_protocol::checked::closest(key, known.iter().map(String::as_str))
        .map(str::to_string)
}

impl ConfigError {
    /// The path of a problem as segments, parsed back from its dotted form.
    fn segs(&self) -> Option<Vec<Seg>> {
        self.path().map(error::parse_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_get_the_closest_known_one() {
        let key = |k: &str| Seg::Key(k.into());
        let suggest = |segs: &[Seg]| match unknown(segs) {
            ConfigError::Unknown { suggestion, .. } => suggestion,
            _ => None,
        };
        assert_eq!(
            suggest(&[key("gateway"), key("bnd")]).as_deref(),
            Some("bind")
        );
        assert_eq!(suggest(&[key("gatway")]).as_deref(), Some("gateway"));
        assert_eq!(
            suggest(&[key("gateway"), key("prot")]).as_deref(),
            Some("port")
        );
        let list = [
            key("agents"),
            key("list"),
            Seg::Index(2),
            key("systemPromt"),
        ];
        assert_eq!(suggest(&list).as_deref(), Some("systemPrompt"));
        let provider = [key("models"), key("providers"), key("eu"), key("apikey")];
        assert_eq!(suggest(&provider).as_deref(), Some("apiKey"));
        assert_eq!(suggest(&[key("gateway"), key("banana")]), None);
    }

    #[test]
    fn lines_are_found_key_after_key() {
        let text = "{\n  gateway: { port: 1 },\n  agents: {\n    list: [\n      { id: \"a\" },\n      { \"id\": \"b\" },\n    ],\n  },\n}";
        let key = |k: &str| Seg::Key(k.into());
        assert_eq!(line_of(text, &[key("gateway"), key("port")]), Some(2));
        let second = [key("agents"), key("list"), Seg::Index(1), key("id")];
        assert_eq!(line_of(text, &second), Some(6));
        assert_eq!(line_of(text, &[key("session")]), None);
    }
}
