//! What a file says as a page: its format by extension, its text (Markdown, reStructuredText,
//! plain text and data files verbatim, for the core's structure parser reads them; HTML as text
//! with `#` headings; PDF text), and its title. Binary content is refused with the reason.

use std::path::Path;

use super::{html, pdf};

/// Bytes looked at for a NUL byte, the mark of a binary file (as git does).
const SNIFF_BYTES: usize = 8000;

/// A document format `ontoloop ingest` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.md`, `.markdown`: pushed verbatim.
    Markdown,
    /// `.rst`: pushed verbatim.
    Rst,
    /// `.txt`, a file without an extension (README, LICENSE), or an extension `--text-ext`
    /// names: pushed verbatim.
    Text,
    /// `.yaml`, `.yml`, `.json`, `.toml`: pushed verbatim (one record per document).
    Data,
    /// `.html`, `.htm`, `.xhtml`: text and headings.
    Html,
    /// `.pdf`: the text of its pages.
    Pdf,
}

impl Format {
    /// The format of the file at `path` (a page id), or none when its extension names no format
    /// read (`extra_text` lists extensions read as plain text, lower case, without the dot).
    pub fn of(path: &str, extra_text: &[String]) -> Option<Format> {
        let ext = extension(path)?;
        Some(match ext.as_str() {
            "" => Format::Text,
            "md" | "markdown" | "mdown" | "mkd" => Format::Markdown,
            "rst" | "rest" => Format::Rst,
            "txt" | "text" => Format::Text,
            "yaml" | "yml" | "json" | "toml" => Format::Data,
            "html" | "htm" | "xhtml" => Format::Html,
            "pdf" => Format::Pdf,
            other if extra_text.iter().any(|e| e == other) => Format::Text,
            _ => return None,
        })
    }
}

/// The lower-case extension of `path`'s file name: empty when it has none.
pub fn extension(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    Some(match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    })
}

/// A file read as a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Its title: the first heading (an HTML `<title>`, a PDF's Info title), else the file name
    /// without its extension.
    pub title: String,
    /// Its text.
    pub body: String,
}

/// Reads `bytes`, the content of the file at `path` in `format`, as a page; the reason when it
/// cannot be read. `max_body_bytes` bounds the text (an event carries the whole body).
pub fn read(
    path: &str,
    format: Format,
    bytes: &[u8],
    max_body_bytes: usize,
) -> Result<Page, String> {
    let (title, body) = match format {
        Format::Markdown | Format::Rst | Format::Text => {
            let body = text(bytes)?;
            (heading(&body), body)
        }
        Format::Data => (None, text(bytes)?),
        Format::Html => {
            let page = html::to_text(&text(bytes)?);
            (page.title.or_else(|| heading(&page.text)), page.text)
        }
        Format::Pdf => {
            let page = pdf::to_text(bytes)?;
            (page.title.or_else(|| heading(&page.text)), page.text)
        }
    };
    if body.trim().is_empty() {
        return Err("no text (an empty file)".to_owned());
    }
    if body.len() > max_body_bytes {
        return Err(format!(
            "its text is {} bytes, more than an event carries ({max_body_bytes})",
            body.len()
        ));
    }
    let title = title
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| stem(path));
    Ok(Page { title, body })
}

/// The first heading the core's structure parser sees, unless the text is data.
fn heading(body: &str) -> Option<String> {
    use ontoloop_core::knowledge::document;
    if document::is_data(body) {
        return None;
    }
    document::parse(body).title
}

/// The file name without its extension.
fn stem(path: &str) -> String {
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned());
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
        _ => name,
    }
}

/// `bytes` as UTF-8 text (a byte-order mark dropped); binary content is refused.
fn text(bytes: &[u8]) -> Result<String, String> {
    let sniffed = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(at) = sniffed.iter().position(|b| *b == 0) {
        return Err(format!("binary (a NUL byte at offset {at})"));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_owned()),
        Err(e) => Err(format!(
            "not UTF-8 text (an invalid byte at offset {})",
            e.valid_up_to()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1 << 20;

    #[test]
    fn formats_come_from_extensions() {
        let none: &[String] = &[];
        assert_eq!(Format::of("a/b.md", none), Some(Format::Markdown));
        assert_eq!(Format::of("b.RST", none), Some(Format::Rst));
        assert_eq!(Format::of("README", none), Some(Format::Text));
        assert_eq!(Format::of("c.yml", none), Some(Format::Data));
        assert_eq!(Format::of("d.htm", none), Some(Format::Html));
        assert_eq!(Format::of("e.pdf", none), Some(Format::Pdf));
        assert_eq!(Format::of("f.png", none), None);
        assert_eq!(
            Format::of("g.adoc", &["adoc".to_owned()]),
            Some(Format::Text)
        );
        assert_eq!(extension("x/.profile").as_deref(), Some(""));
    }

    #[test]
    fn the_title_is_the_first_heading_else_the_file_name() {
        // A file, its title, and its body where the case is about the body too.
        type Case<'a> = (&'a str, Format, &'a [u8], &'a str, Option<&'a str>);
        #[rustfmt::skip]
        let files: [Case; 5] = [
            ("docs/vpn.md", Format::Markdown, b"# Remote access\n\nText.", "Remote access", None),
            ("ops/oncall.rst", Format::Rst, b"On-call\n=======\n\nText.", "On-call", None),
            ("notes.txt", Format::Text, b"just text", "notes", None),
            // A data file's comment is no heading: its subject is named by the file.
            ("svc/ledger.yaml", Format::Data, b"# config\nowner: payments\n", "ledger",
                Some("# config\nowner: payments\n")),
            ("t.html", Format::Html, b"<h1>Heading</h1><p>Body.</p>", "Heading",
                Some("# Heading\n\nBody.\n")),
        ];
        for (path, format, bytes, title, body) in files {
            let page = read(path, format, bytes, MAX).expect("read");
            assert_eq!(page.title, title, "{path}");
            if let Some(body) = body {
                assert_eq!(page.body, body, "{path}");
            }
        }
    }

    #[test]
    fn binary_and_empty_files_are_refused_with_the_reason() {
        assert_eq!(
            read("a.md", Format::Markdown, b"# x\0y", MAX),
            Err("binary (a NUL byte at offset 3)".to_owned())
        );
        assert_eq!(
            read("a.txt", Format::Text, b"caf\xe9", MAX),
            Err("not UTF-8 text (an invalid byte at offset 3)".to_owned())
        );
        assert_eq!(
            read("a.txt", Format::Text, b" \n", MAX),
            Err("no text (an empty file)".to_owned())
        );
        assert!(
            read("a.txt", Format::Text, b"0123456789", 4)
                .expect_err("too long")
                .contains("more than an event carries")
        );
        let page = read("a.txt", Format::Text, b"\xEF\xBB\xBFhello", MAX).expect("read");
        assert_eq!(page.body, "hello");
    }
}
