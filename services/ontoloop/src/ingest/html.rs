//! HTML read as text with its headings: a small tag stripper, no DOM. Headings become Markdown
//! `#` lines (so the core's document parser labels the sections below them), block elements
//! paragraphs, list items `- ` lines; scripts, styles and comments are dropped and entities
//! decoded. Malformed markup degrades to its text, never to an error.

/// What an HTML page says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Html {
    /// The `<title>`, when it has one.
    pub title: Option<String>,
    /// Its text, Markdown-ish: `#` headings, paragraphs separated by blank lines.
    pub text: String,
}

/// Reads `html` as text with its headings.
pub fn to_text(html: &str) -> Html {
    let mut out = Out::default();
    let mut title = None;
    let mut rest = html;
    while !rest.is_empty() {
        let Some(open) = rest.find('<') else {
            out.text(rest);
            break;
        };
        out.text(&rest[..open]);
        rest = &rest[open..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(tag) = Tag::parse(rest) else {
            // A `<` that opens no tag is text.
            out.text("<");
            rest = &rest[1..];
            continue;
        };
        rest = &rest[tag.len..];
        if tag.closing {
            out.close(&tag.name);
            continue;
        }
        match tag.name.as_str() {
            "script" | "style" | "noscript" | "template" | "svg" | "math" => {
                rest = skip_element(rest, &tag.name);
            }
            "title" => {
                let end = find_closing(rest, "title").unwrap_or(rest.len());
                let text = collapse(&decode_entities(&rest[..end]));
                if title.is_none() && !text.is_empty() {
                    title = Some(text);
                }
                rest = skip_element(rest, "title");
            }
            name => out.open(name),
        }
    }
    Html {
        title,
        text: out.finish(),
    }
}

/// A tag: `<name ...>`, `</name>` or `<!doctype ...>` (a declaration, named `!`).
struct Tag {
    name: String,
    closing: bool,
    /// Bytes from `<` to one past `>`.
    len: usize,
}

impl Tag {
    /// The tag `s` starts with (`s` starts with `<`), or none when `<` starts no tag.
    fn parse(s: &str) -> Option<Tag> {
        let bytes = s.as_bytes();
        let mut i = 1;
        let closing = bytes.get(i) == Some(&b'/');
        if closing {
            i += 1;
        }
        let declaration = matches!(bytes.get(i), Some(b'!' | b'?'));
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-') {
            i += 1;
        }
        if i == start && !declaration {
            return None;
        }
        let name = if declaration {
            "!".to_owned()
        } else {
            s[start..i].to_ascii_lowercase()
        };
        // The end: the first `>` outside a quoted attribute value.
        let mut quote = None;
        while i < bytes.len() {
            match (quote, bytes[i]) {
                (None, b'>') => {
                    return Some(Tag {
                        name,
                        closing,
                        len: i + 1,
                    });
                }
                (None, q @ (b'"' | b'\'')) => quote = Some(q),
                (Some(q), c) if c == q => quote = None,
                _ => {}
            }
            i += 1;
        }
        // Unterminated: the rest of the input is the tag.
        Some(Tag {
            name,
            closing,
            len: s.len(),
        })
    }
}

/// Where `</name` starts in `s` (ASCII case-insensitive).
fn find_closing(s: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find("</") {
        let at = from + i;
        let candidate = &s.as_bytes()[at + 2..];
        if candidate.len() >= name.len()
            && candidate[..name.len()].eq_ignore_ascii_case(name.as_bytes())
        {
            return Some(at);
        }
        from = at + 2;
    }
    None
}

/// `s` after the element's closing tag (all of it gone when there is none).
fn skip_element<'a>(s: &'a str, name: &str) -> &'a str {
    match find_closing(s, name) {
        Some(at) => {
            let after = &s[at..];
            after.find('>').map_or("", |end| &after[end + 1..])
        }
        None => "",
    }
}

/// The text being built: block breaks are owed and written before the next text, so empty
/// elements leave no blank lines behind.
#[derive(Default)]
struct Out {
    text: String,
    /// 0: nothing owed, 1: a line break, 2: a blank line.
    owed_breaks: u8,
    /// What the next line starts with once text comes (`## `, `- `).
    owed_prefix: String,
    space: bool,
    pre: usize,
}

impl Out {
    fn open(&mut self, name: &str) {
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.owe(2);
                let level = usize::from(name.as_bytes()[1] - b'0');
                self.owed_prefix = format!("{} ", "#".repeat(level));
            }
            "li" | "dt" => {
                self.owe(1);
                self.owed_prefix = "- ".to_owned();
            }
            "br" | "tr" | "dd" => self.owe(1),
            "td" | "th" => self.space = true,
            "pre" => {
                self.owe(2);
                self.pre += 1;
            }
            name if is_block(name) => self.owe(2),
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.owed_prefix.clear();
                self.owe(2);
            }
            "li" | "dt" | "dd" | "tr" => self.owe(1),
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.owe(2);
            }
            name if is_block(name) => self.owe(2),
            _ => {}
        }
    }

    fn owe(&mut self, breaks: u8) {
        self.owed_breaks = self.owed_breaks.max(breaks);
        self.space = false;
    }

    fn text(&mut self, raw: &str) {
        if raw.is_empty() {
            return;
        }
        let decoded = decode_entities(raw);
        if self.pre > 0 {
            if decoded.trim().is_empty() && self.owed_breaks > 0 {
                return;
            }
            self.pay();
            self.text.push_str(&decoded);
            return;
        }
        let mut words = decoded.split_whitespace().peekable();
        if words.peek().is_none() {
            if !decoded.is_empty() {
                self.space = true;
            }
            return;
        }
        if decoded.starts_with(char::is_whitespace) {
            self.space = true;
        }
        for word in words {
            if self.owed_breaks > 0 || !self.owed_prefix.is_empty() || self.text.is_empty() {
                self.pay();
            } else if self.space && !self.text.ends_with([' ', '\n']) {
                self.text.push(' ');
            }
            self.text.push_str(word);
            self.space = true;
        }
        self.space = decoded.ends_with(char::is_whitespace);
    }

    /// Writes the breaks and the prefix owed before text.
    fn pay(&mut self) {
        if !self.text.is_empty() {
            let breaks = match self.owed_breaks {
                0 => None,
                1 => Some("\n"),
                _ => Some("\n\n"),
            };
            if let Some(breaks) = breaks {
                let trimmed = self.text.trim_end_matches([' ', '\n']).len();
                self.text.truncate(trimmed);
                self.text.push_str(breaks);
            }
        }
        self.text.push_str(&self.owed_prefix);
        self.owed_prefix.clear();
        self.owed_breaks = 0;
        self.space = false;
    }

    fn finish(mut self) -> String {
        let trimmed = self.text.trim_end().len();
        self.text.truncate(trimmed);
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text
    }
}

/// Elements that start and end a paragraph.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "main"
            | "nav"
            | "aside"
            | "blockquote"
            | "table"
            | "thead"
            | "tbody"
            | "ul"
            | "ol"
            | "dl"
            | "figure"
            | "figcaption"
            | "form"
            | "hr"
            | "address"
            | "details"
            | "summary"
            | "body"
            | "caption"
    )
}

/// Runs of whitespace as one space, trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` with character references decoded: numeric ones and the named ones pages use most; an
/// unknown name stays as written.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
            .map(|i| i + 1);
        let (name, len) = match end {
            Some(e) if rest[e..].starts_with(';') => (&rest[1..e], e + 1),
            Some(e) => (&rest[1..e], e),
            None => (&rest[1..], rest.len()),
        };
        match entity(name) {
            Some(c) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "deg" => '°',
        "middot" => '·',
        "bull" => '•',
        "times" => '×',
        "shy" => '\u{ad}',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_paragraphs_and_lists_become_markdown_ish_text() {
        let page = to_text(
            "<!doctype html><html><head><title>Travel &amp; expenses</title>\
             <style>p { color: red }</style><script>var x = '<p>';</script></head>\
             <body><h1>Travel policy</h1><p>Book trains &amp; flights\n   two weeks ahead.</p>\
             <!-- a comment --><h2 class=\"x\">Hotels</h2><ul><li>Up to &euro;120 a night</li>\
             <li>Breakfast <b>included</b></li></ul><p>Ask <a href='/x?a=1&b=2'>the desk</a>.</p>\
             </body></html>",
        );
        assert_eq!(page.title.as_deref(), Some("Travel & expenses"));
        assert_eq!(
            page.text,
            "# Travel policy\n\nBook trains & flights two weeks ahead.\n\n## Hotels\n\n\
             - Up to €120 a night\n- Breakfast included\n\nAsk the desk.\n"
        );
    }

    #[test]
    fn malformed_markup_degrades_to_its_text() {
        assert_eq!(to_text("a < b and c > d").text, "a < b and c > d\n");
        assert_eq!(to_text("<p>unclosed <b>bold").text, "unclosed bold\n");
        assert_eq!(to_text("<script>never closed").text, "");
        assert_eq!(to_text("x &unknown; &#65;&#x42;").text, "x &unknown; AB\n");
        assert_eq!(to_text("").text, "");
    }

    #[test]
    fn preformatted_text_keeps_its_lines() {
        let page = to_text("<p>Run:</p><pre>make test\nmake bench</pre><p>Done.</p>");
        assert_eq!(page.text, "Run:\n\nmake test\nmake bench\n\nDone.\n");
    }
}
