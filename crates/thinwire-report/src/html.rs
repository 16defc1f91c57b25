//! The page: its shell and style sheet, the one HTML escape, figures and badges.
//! Everything is appended to one `String`.

use std::fmt::Write as _;

/// Escapes text for HTML element content and attribute values (`&`, `<`, `>`, `"`, `'`).
///
/// The one HTML escape of the workspace (`.ci/shape.py` reports any other).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The style sheet of every report.
///
/// Tables fit a 1,400 px window: header cells and text cells (a protocol with its sweep
/// point) wrap where they must, numbers never, so a wide table of counters narrows its
/// columns to their longest word; the wrapper's horizontal scroll is the last resort.
/// `tools/check-report-width.sh` measures it in headless Chromium.
const CSS: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0; background: #f6f7f9; color: #1d2433; line-height: 1.45; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 24px 64px; background: #fff; }
h1 { margin: 0 0 4px; font-size: 28px; }
h2 { margin: 36px 0 10px; font-size: 21px; border-bottom: 1px solid #dde1e8; padding-bottom: 4px; }
.meta { color: #4a5468; margin: 0 0 8px; }
.meta b { color: #1d2433; }
.note { color: #4a5468; font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #dde1e8; padding: 3px 6px; }
th { background: #eef1f5; text-align: left; vertical-align: bottom; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.class-row td { color: #3a4356; background: #fbfcfd; }
tr.first-class-row td { border-top: 2px solid #b8c0cc; }
.badge { display: inline-block; font-size: 11px; padding: 0 5px; margin-left: 4px; border-radius: 3px;
         background: #fff1d6; color: #7a4b00; border: 1px solid #e9c77d; vertical-align: 1px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.wide { overflow-x: auto; }
.nowrap { white-space: nowrap; }
figure { margin: 16px 0 28px; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid #e4e7ec; }
figcaption { font-size: 14px; color: #4a5468; margin-top: 6px; }
.error { color: #a00; }
td.ok { color: #11603a; background: #e8f6ee; }
td.bad { color: #8a1c1c; background: #fbeaea; }
td.muted { color: #6a7385; }
dl dt { font-weight: 600; margin-top: 8px; }
dl dd { margin-left: 18px; }
"#;

/// Opens the page: the document head (`title`, the style sheet) and `<main>`.
pub fn page_start(html: &mut String, title: &str) {
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        escape(title)
    );
}

/// Closes the page that [`page_start`] opened.
pub fn page_end(html: &mut String) {
    html.push_str("</main>\n</body>\n</html>\n");
}

/// A whole page around the HTML fragment `body`.
pub fn page(title: &str, body: &str) -> String {
    let mut html = String::with_capacity(body.len() + 4096);
    page_start(&mut html, title);
    html.push_str(body);
    page_end(&mut html);
    html
}

/// Appends `<figure id="id">` holding `svg` (or, when drawing failed, the error as a
/// message) and the caption, an HTML fragment written as it is.
pub fn figure(html: &mut String, id: &str, svg: Result<String, String>, caption: &str) {
    let _ = writeln!(html, "<figure id=\"{id}\">");
    match svg {
        Ok(svg) => {
            // plotters emits a bare <svg> element; keep only from it on, in case a backend
            // version adds an XML declaration.
            let start = svg.find("<svg").unwrap_or(0);
            html.push_str(svg[start..].trim_end());
            html.push('\n');
        }
        Err(e) => {
            let _ = writeln!(html, "<p class=\"error\">{}</p>", escape(&e));
        }
    }
    let _ = writeln!(html, "<figcaption>{caption}</figcaption>\n</figure>");
}

/// `text`, escaped, kept on one line: `<span class="nowrap">text</span>` (e.g. a protocol
/// name, which would otherwise break at its hyphens when its table column narrows).
pub fn nowrap(text: &str) -> String {
    format!("<span class=\"nowrap\">{}</span>", escape(text))
}

/// A badge after a name: `<span class="badge">label</span>` (e.g. "model", "DISAGREE").
pub fn badge(label: &str) -> String {
    format!("<span class=\"badge\">{}</span>", escape(label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(escape("plain text"), "plain text");
    }

    #[test]
    fn page_wraps_the_body() {
        let p = page("a & b", "<p>x</p>\n");
        assert!(p.starts_with("<!DOCTYPE html>\n"));
        assert!(p.contains("<title>a &amp; b</title>"));
        assert!(p.ends_with("<main>\n<p>x</p>\n</main>\n</body>\n</html>\n"));
    }

    #[test]
    fn figures_hold_the_svg_or_the_error() {
        let mut h = String::new();
        figure(&mut h, "f", Ok("<?xml?>\n<svg></svg>\n".into()), "c &gt; d");
        assert_eq!(
            h,
            "<figure id=\"f\">\n<svg></svg>\n<figcaption>c &gt; d</figcaption>\n</figure>\n"
        );
        let mut h = String::new();
        figure(&mut h, "g", Err("no <data>".into()), "c");
        assert!(h.contains("<p class=\"error\">no &lt;data&gt;</p>"));
        assert_eq!(badge("model"), "<span class=\"badge\">model</span>");
        assert_eq!(nowrap("a-b"), "<span class=\"nowrap\">a-b</span>");
    }
}
