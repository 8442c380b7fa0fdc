use pretty_assertions::assert_eq;

use super::*;

fn text(html: &str) -> String {
    readable(html, None).text
}

#[test]
fn a_page_reads_as_its_title_headings_paragraphs_and_lists() {
    let html = r##"<!DOCTYPE html>
<html><head>
  <meta charset="utf-8"><title> The   Rust
  Book </title>
  <style>body { color: red }</style>
  <script>var secret = "</p>not text";</script>
</head>
<body>
  <!-- a comment <p>hidden</p> -->
  <nav><a href="/">Home</a> <a href="#top">Top</a></nav>
  <h1>Getting   started</h1>
  <p>Install <b>rustup</b>,
     then run <code>cargo new</code>.</p>
  <ul>
    <li>one</li>
    <li><p>two</p>
      <ol><li>two.a</li></ol>
    </li>
  </ul>
  <h2></h2>
  <p>Fish &amp; chips &lt;3 &eacute;t&#233; &#x1F980; &unknown; &amp</p>
  <noscript>Enable JavaScript</noscript>
</body></html>"##;
    let base = Url::parse("https://doc.example/book/").unwrap();
    assert_eq!(
        readable(html, Some(&base)),
        Readable {
            title: Some("The Rust Book".into()),
            text: "Home (https://doc.example/) Top\n\n\
                   # Getting started\n\n\
                   Install rustup, then run cargo new.\n\n\
                   - one\n\
                   - two\n  \
                   - two.a\n\n\
                   Fish & chips <3 été 🦀 &unknown; &amp"
                .into(),
        }
    );
}

#[test]
fn breaks_tables_and_preformatted_text_keep_their_shape() {
    let html = "<div>a<br>b<br><br>c</div><table><tr><th>k</th><th>v</th></tr>\
                <tr><td>x</td><td>1</td></tr></table><pre>fn main() {\n    go();\n}</pre>after";
    assert_eq!(
        text(html),
        "a\nb\n\nc\n\nk | v\nx | 1\n\nfn main() {\n    go();\n}\n\nafter"
    );
}

#[test]
fn links_name_their_absolute_address_once() {
    let base = Url::parse("http://site.test/a/b.html").unwrap();
    let html = "<p><a href='c.html'>next</a>, <a href=\"http://x.test/\">http://x.test/</a>, \
                <a href=mailto:me@x.test>mail</a>, <a>bare</a>, \
                <a href=\"/q?a=1&amp;b=2\">query</a></p>";
    assert_eq!(
        readable(html, Some(&base)).text,
        "next (http://site.test/a/c.html), http://x.test/, mail, bare, \
         query (http://site.test/q?a=1&b=2)"
    );
}

#[test]
fn broken_markup_still_gives_text() {
    assert_eq!(text("a < b and c <= d, 1<2"), "a < b and c <= d, 1<2");
    assert_eq!(text("<p class=\"x>y\">quoted > kept</p>"), "quoted > kept");
    assert_eq!(text("<p>unclosed <b attr"), "unclosed");
    assert_eq!(text("<script>never closed"), "");
    assert_eq!(text("x<!-- never closed"), "x");
    assert_eq!(text("<![CDATA[a <b> c]]>d"), "a <b> cd");
    assert_eq!(text("<scriptx>shown</scriptx>"), "shown");
    assert_eq!(text("<script>a</scriptx>b</script >c"), "c");
    assert_eq!(
        text("&#0; &#xD800; &#99999999999;"),
        "\u{FFFD} \u{FFFD} &#99999999999;"
    );
    assert_eq!(readable("<title></title>x", None).title, None);
}

#[test]
fn snippets_become_one_plain_line() {
    assert_eq!(
        plain("The <strong>Rust</strong>\n programming&nbsp;language&#39;s <em>book</em>"),
        "The Rust programming language's book"
    );
}

proptest::proptest! {
    /// Any input, however broken, reads as some text without a panic (no slice off a
    /// character boundary, no index past the end).
    #[test]
    fn any_markup_reads_without_a_panic(
        pieces in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("<".to_string()),
                proptest::strategy::Just("</".to_string()),
                proptest::strategy::Just("<!--".to_string()),
                proptest::strategy::Just("<![CDATA[".to_string()),
                proptest::strategy::Just("<script>".to_string()),
                proptest::strategy::Just("<a href='".to_string()),
                proptest::strategy::Just("&#x".to_string()),
                proptest::strategy::Just("<li>".to_string()),
                proptest::strategy::Just("</ul>".to_string()),
                "[a-z=\"'/>;&# é🦀\n]{0,12}",
            ],
            0..40,
        )
    ) {
        let html = pieces.concat();
        let base = Url::parse("http://site.test/").unwrap();
        let page = readable(&html, Some(&base));
        proptest::prop_assert!(!page.text.starts_with(char::is_whitespace));
    }
}
