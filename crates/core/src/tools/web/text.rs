//! An HTML page as text a model can read: what a reader of the page sees, in its order, with
//! its structure kept as plain-text conventions (`#` headings, `- ` list items, blank lines
//! between paragraphs, `text (url)` links) and everything a reader does not see left out
//! (scripts, styles, `<noscript>`, templates, inline SVG, comments; the head holds nothing
//! else a reader sees but its `<title>`, which is answered apart).
//!
//! Hand-written on purpose: a forgiving scan of tags and text, not an HTML5 tree builder. It
//! never fails — any input, however broken, gives some text — and it keeps no tree, so a
//! page costs one pass over its bytes. Every delimiter it looks for is ASCII, so every index it
//! slices at is a character boundary.

use std::borrow::Cow;

use reqwest::Url;

/// An HTML page as a model reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Readable {
    /// The page's `<title>`, whitespace collapsed; `None` when it has none (or an empty one).
    pub title: Option<String>,
    pub text: String,
}

/// Elements whose content no reader sees; skipped whole, up to their end tag.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas",
];

/// Elements that stand as a paragraph of their own: a blank line before and after.
const PARAGRAPHS: &[&str] = &[
    "p",
    "pre",
    "blockquote",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "main",
    "aside",
    "figure",
    "form",
    "fieldset",
    "details",
    "address",
    "dl",
    "hr",
];

/// Elements that start a line of their own.
const LINES: &[&str] = &[
    "div",
    "dt",
    "dd",
    "figcaption",
    "summary",
    "caption",
    "legend",
    "option",
    "body",
];

/// Reads `html` as text; links are made absolute against `base` (the page's address).
pub fn readable(html: &str, base: Option<&Url>) -> Readable {
    // ASCII lowercasing keeps every byte where it was: indices found in `lower` are indices
    // into `html`.
    let lower = html.to_ascii_lowercase();
    let mut out = Writer::default();
    let mut title = None;
    let mut at = 0;
    while let Some(found) = html[at..].find('<') {
        let lt = at + found;
        out.text(&html[at..lt]);
        at = match markup(html, &lower, lt) {
            Markup::Literal => {
                out.text("<");
                lt + 1
            }
            Markup::Skip(end) => end,
            Markup::Text(text, end) => {
                out.text(text);
                end
            }
            Markup::Tag(tag, end) => match tag.name.as_str() {
                "title" if !tag.closing => {
                    let (text, end) = raw_until(html, &lower, end, "title");
                    let text = collapse(&decode(text));
                    if title.is_none() && !text.is_empty() {
                        title = Some(text);
                    }
                    end
                }
                name if !tag.closing && !tag.self_closing && SKIPPED.contains(&name) => {
                    raw_until(html, &lower, end, name).1
                }
                _ => {
                    out.tag(&tag, base);
                    end
                }
            },
        };
    }
    out.text(&html[at..]);
    Readable {
        title,
        text: out.finish(),
    }
}

/// An HTML fragment (a search snippet with `<strong>` marks) as one line of plain text.
pub fn plain(fragment: &str) -> String {
    collapse(&readable(fragment, None).text)
}

/// What starts at a `<`.
enum Markup<'a> {
    /// Not markup: a `<` of the text.
    Literal,
    /// A comment, a doctype or a processing instruction: nothing to read; goes on at the index.
    Skip(usize),
    /// A CDATA section's text.
    Text(&'a str, usize),
    /// A start or end tag.
    Tag(Tag, usize),
}

/// A start or end tag: its name (lowercased) and the one attribute read, `href`.
struct Tag {
    name: String,
    closing: bool,
    self_closing: bool,
    href: Option<String>,
}

/// The markup starting at `lt` (`html[lt] == '<'`) and the index just after it.
fn markup<'a>(html: &'a str, lower: &str, lt: usize) -> Markup<'a> {
    let rest = &lower[lt..];
    if rest.starts_with("<!--") {
        return Markup::Skip(after(lower, lt + 4, "-->"));
    }
    if rest.starts_with("<![cdata[") {
        let start = lt + 9;
        let end = lower[start..].find("]]>").map_or(html.len(), |i| start + i);
        return Markup::Text(&html[start..end], (end + 3).min(html.len()));
    }
    if rest.starts_with("<!") || rest.starts_with("<?") {
        return Markup::Skip(after(lower, lt + 2, ">"));
    }
    match tag(html, lt) {
        Some((tag, end)) => Markup::Tag(tag, end),
        None => Markup::Literal,
    }
}

/// The index just after the first `needle` at or after `from` (the end when there is none).
fn after(lower: &str, from: usize, needle: &str) -> usize {
    lower[from..]
        .find(needle)
        .map_or(lower.len(), |i| from + i + needle.len())
}

/// The raw content of an element whose content is not markup (`<script>`, `<title>`), from
/// `start` to its end tag `</name…>`, and the index after that end tag.
fn raw_until<'a>(html: &'a str, lower: &str, start: usize, name: &str) -> (&'a str, usize) {
    let close = format!("</{name}");
    let mut from = start;
    while let Some(i) = lower[from..].find(&close) {
        let at = from + i;
        let next = lower.as_bytes().get(at + close.len()).copied();
        // `</scriptx` is not the end of a script.
        if next.is_none_or(|b| b == b'>' || b == b'/' || b.is_ascii_whitespace()) {
            return (&html[start..at], after(lower, at + close.len(), ">"));
        }
        from = at + close.len();
    }
    (&html[start..], html.len())
}

/// The tag at `lt`, or `None` when the `<` does not start one (`a < b`).
fn tag(html: &str, lt: usize) -> Option<(Tag, usize)> {
    let bytes = html.as_bytes();
    let closing = bytes.get(lt + 1) == Some(&b'/');
    let start = lt + 1 + usize::from(closing);
    if !bytes.get(start)?.is_ascii_alphabetic() {
        return None;
    }
    let mut i = start;
    while i < bytes.len()
        && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-' || bytes[i] == b':')
    {
        i += 1;
    }
    let mut tag = Tag {
        name: html[start..i].to_ascii_lowercase(),
        closing,
        self_closing: false,
        href: None,
    };
    loop {
        let mut slash = false;
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            slash = bytes[i] == b'/';
            i += 1;
        }
        match bytes.get(i) {
            None => return Some((tag, i)),
            Some(b'>') => {
                tag.self_closing = slash;
                return Some((tag, i + 1));
            }
            Some(_) => {}
        }
        let (name, value, next) = attribute(html, i);
        if name.eq_ignore_ascii_case("href") {
            tag.href = Some(decode(value).trim().to_string());
        }
        i = next;
    }
}

/// The attribute at `i` (not whitespace, `/` or `>`): its name, its value, the index after it.
fn attribute(html: &str, mut i: usize) -> (&str, &str, usize) {
    let bytes = html.as_bytes();
    let start = i;
    while i < bytes.len()
        && !matches!(bytes[i], b'=' | b'>' | b'/')
        && !bytes[i].is_ascii_whitespace()
    {
        i += 1;
    }
    let name = &html[start..i];
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    if bytes.get(i) != Some(&b'=') {
        return (name, "", i);
    }
    i += 1;
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    match bytes.get(i) {
        Some(&quote) if quote == b'"' || quote == b'\'' => {
            let from = i + 1;
            let end = html[from..]
                .find(char::from(quote))
                .map_or(html.len(), |j| from + j);
            (name, &html[from..end], (end + 1).min(html.len()))
        }
        _ => {
            let from = i;
            while i < bytes.len() && bytes[i] != b'>' && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            (name, &html[from..i], i)
        }
    }
}

/// The text being written, with what is owed before the next visible character: whitespace
/// collapses to one space, block elements owe line breaks (at most a blank line), headings
/// and list items owe their line prefix — all settled only when text follows, so an empty
/// element leaves nothing behind.
#[derive(Default)]
struct Writer {
    text: String,
    breaks: usize,
    space: bool,
    prefix: Option<String>,
    /// Open `<pre>` elements: their whitespace is kept.
    pre: usize,
    /// Open lists, for the indentation of nested items.
    lists: usize,
    /// Cells written in the current table row.
    cells: usize,
    /// The open link: its address and where its text starts.
    link: Option<(String, usize)>,
}

impl Writer {
    fn text(&mut self, raw: &str) {
        if raw.is_empty() {
            return;
        }
        for c in decode(raw).chars() {
            if self.pre > 0 {
                if c != '\r' {
                    self.settle();
                    self.text.push(c);
                }
            } else if c.is_whitespace() {
                self.space = true;
            } else {
                self.settle();
                self.text.push(c);
            }
        }
    }

    /// Writes what is owed before a visible character.
    fn settle(&mut self) {
        if !self.text.is_empty() {
            if self.breaks > 0 {
                let kept = self.text.trim_end_matches([' ', '\t']).len();
                self.text.truncate(kept);
                let have = self.text.len() - self.text.trim_end_matches('\n').len();
                for _ in have..self.breaks {
                    self.text.push('\n');
                }
            } else if self.space && !self.text.ends_with(char::is_whitespace) {
                self.text.push(' ');
            }
        }
        self.breaks = 0;
        self.space = false;
        if let Some(prefix) = self.prefix.take() {
            self.text.push_str(&prefix);
        }
    }

    /// Owes `n` line breaks (1: a new line, 2: a blank line) — unless a prefix is owed: the
    /// `<p>` inside an `<li>` stays on the item's line. Inside a list, lines stay together.
    fn block(&mut self, n: usize) {
        if self.prefix.is_none() {
            let n = if self.lists > 0 { n.min(1) } else { n };
            self.breaks = self.breaks.max(n);
        }
    }

    fn line(&mut self, n: usize, prefix: String) {
        self.block(n);
        self.prefix = Some(prefix);
    }

    fn tag(&mut self, tag: &Tag, base: Option<&Url>) {
        let name = tag.name.as_str();
        if let Some(level) = heading(name) {
            if tag.closing {
                self.prefix = None;
                self.block(2);
            } else {
                self.line(2, format!("{} ", "#".repeat(level)));
            }
            return;
        }
        match (name, tag.closing) {
            ("br", _) if self.prefix.is_none() => self.breaks = (self.breaks + 1).min(2),
            ("li", false) => {
                let indent = "  ".repeat(self.lists.saturating_sub(1));
                self.line(1, format!("{indent}- "));
            }
            ("li", true) => {
                self.prefix = None;
                self.block(1);
            }
            ("ul" | "ol", closing) => {
                self.lists = if closing {
                    self.lists.saturating_sub(1)
                } else {
                    self.lists + 1
                };
                self.block(if self.lists > 0 { 1 } else { 2 });
            }
            ("tr", _) => {
                self.cells = 0;
                self.block(1);
            }
            ("td" | "th", false) => {
                if self.cells > 0 {
                    self.settle();
                    self.text.push_str(" | ");
                }
                self.cells += 1;
            }
            ("pre", closing) => {
                self.pre = if closing {
                    self.pre.saturating_sub(1)
                } else {
                    self.pre + 1
                };
                self.block(2);
            }
            ("a", false) => {
                self.link = link(tag.href.as_deref(), base).map(|u| (u, self.text.len()))
            }
            ("a", true) => self.end_link(),
            _ if PARAGRAPHS.contains(&name) => self.block(2),
            _ if LINES.contains(&name) => self.block(1),
            _ => {}
        }
    }

    /// `text (url)` for a link whose text is not its address already.
    fn end_link(&mut self) {
        let Some((url, start)) = self.link.take() else {
            return;
        };
        let shown = self.text.get(start..).unwrap_or_default().trim();
        if !shown.is_empty() && shown != url {
            self.text.push_str(&format!(" ({url})"));
        }
    }

    /// The text, each line's trailing whitespace and blank lines at either end removed.
    fn finish(self) -> String {
        let mut text = String::with_capacity(self.text.len());
        let mut blank = 0;
        for line in self.text.trim().lines() {
            let line = line.trim_end();
            if line.is_empty() {
                blank += 1;
                if blank > 1 {
                    continue;
                }
            } else {
                blank = 0;
            }
            text.push_str(line);
            text.push('\n');
        }
        text.truncate(text.trim_end().len());
        text
    }
}

fn heading(name: &str) -> Option<usize> {
    match name.as_bytes() {
        [b'h', level @ b'1'..=b'6'] => Some(usize::from(level - b'0')),
        _ => None,
    }
}

/// A link's absolute http(s) address; `None` for one to the page itself (`#…`), to script,
/// mail or anything else a model cannot fetch.
fn link(href: Option<&str>, base: Option<&Url>) -> Option<String> {
    let href = href?;
    if href.is_empty() || href.starts_with('#') {
        return None;
    }
    let url = match base {
        Some(base) => base.join(href).ok()?,
        None => Url::parse(href).ok()?,
    };
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

/// Whitespace runs as one space, none at either end.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with its character references (`&amp;`, `&#233;`, `&#x1F600;`) replaced; an unknown
/// or unterminated one stays as written.
pub fn decode(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        match reference(rest) {
            Some((replacement, len)) => {
                out.push_str(&replacement);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The reference at the start of `s` (`s` starts with `&`) and its length, `;` included.
fn reference(s: &str) -> Option<(Cow<'static, str>, usize)> {
    // Names are short: look no further than 32 bytes for the `;`.
    let semi = s.bytes().skip(1).take(32).position(|b| b == b';')? + 1;
    let body = &s[1..semi];
    let replacement = match body.strip_prefix('#') {
        Some(number) => {
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse::<u32>().ok()?,
            };
            let c = char::from_u32(code)
                .filter(|c| *c != '\0')
                .unwrap_or('\u{FFFD}');
            Cow::Owned(c.to_string())
        }
        None => Cow::Borrowed(named(body)?),
    };
    Some((replacement, semi + 1))
}

/// The named references pages use most.
fn named(name: &str) -> Option<&'static str> {
    let text = match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" | "ensp" | "emsp" | "thinsp" => " ",
        "shy" | "zwj" | "zwnj" | "lrm" | "rlm" => "",
        "copy" => "©",
        "reg" => "®",
        "trade" => "™",
        "hellip" => "…",
        "mdash" => "—",
        "ndash" => "–",
        "minus" => "−",
        "lsquo" => "‘",
        "rsquo" => "’",
        "sbquo" => "‚",
        "ldquo" => "“",
        "rdquo" => "”",
        "bdquo" => "„",
        "laquo" => "«",
        "raquo" => "»",
        "bull" => "•",
        "middot" => "·",
        "deg" => "°",
        "euro" => "€",
        "pound" => "£",
        "yen" => "¥",
        "cent" => "¢",
        "sect" => "§",
        "para" => "¶",
        "times" => "×",
        "divide" => "÷",
        "plusmn" => "±",
        "frac12" => "½",
        "frac14" => "¼",
        "frac34" => "¾",
        "larr" => "←",
        "rarr" => "→",
        "uarr" => "↑",
        "darr" => "↓",
        "auml" => "ä",
        "ouml" => "ö",
        "uuml" => "ü",
        "Auml" => "Ä",
        "Ouml" => "Ö",
        "Uuml" => "Ü",
        "szlig" => "ß",
        "aacute" => "á",
        "agrave" => "à",
        "acirc" => "â",
        "eacute" => "é",
        "egrave" => "è",
        "ecirc" => "ê",
        "Eacute" => "É",
        "iacute" => "í",
        "oacute" => "ó",
        "uacute" => "ú",
        "ccedil" => "ç",
        "ntilde" => "ñ",
        _ => return None,
    };
    Some(text)
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
