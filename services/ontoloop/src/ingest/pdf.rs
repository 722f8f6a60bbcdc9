//! PDF text through `lopdf`: each page's text in reading order of its content stream, pages
//! separated by blank lines, the title from the document's Info dictionary. A PDF the crate cannot
//! read (or that panics it) is refused with the reason; a PDF with no text (scanned pages: there
//! is no OCR) is refused too.

/// Decompressed content bytes one page may expand to (a small stream must not inflate without
/// bound).
const MAX_PAGE_CONTENT_BYTES: usize = 64 * 1024 * 1024;

/// What a PDF says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pdf {
    /// The Info dictionary's `/Title`, when set.
    pub title: Option<String>,
    /// Its text.
    pub text: String,
}

/// Reads the text of the PDF in `bytes`; the reason when it cannot.
pub fn to_text(bytes: &[u8]) -> Result<Pdf, String> {
    // lopdf is robust on the PDFs it was tested with, not proven on every input: a panic on a
    // hostile file is one file refused, not the run ended.
    match std::panic::catch_unwind(|| read(bytes)) {
        Ok(result) => result,
        Err(_) => Err("the PDF reader failed on this file (lopdf panicked)".to_owned()),
    }
}

fn read(bytes: &[u8]) -> Result<Pdf, String> {
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| format!("not a readable PDF: {e}"))?;
    if doc.is_encrypted() && doc.encryption_state.is_none() {
        return Err("an encrypted PDF (it needs a password)".to_owned());
    }
    let mut text = String::new();
    let mut failed = Vec::new();
    for number in doc.get_pages().into_keys() {
        match doc.extract_text_with_limit(&[number], MAX_PAGE_CONTENT_BYTES) {
            Ok(page) => {
                let page = tidy(&page);
                if page.is_empty() {
                    continue;
                }
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&page);
            }
            Err(e) => failed.push(format!("page {number}: {e}")),
        }
    }
    if text.is_empty() {
        return Err(match failed.first() {
            Some(first) => format!("no text could be read ({first})"),
            None => "no text in the PDF (scanned pages? there is no OCR)".to_owned(),
        });
    }
    text.push('\n');
    Ok(Pdf {
        title: title(&doc),
        text,
    })
}

/// The Info dictionary's title, when it has a non-blank one.
fn title(doc: &lopdf::Document) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok()?;
    let info = match info {
        lopdf::Object::Reference(id) => doc.get_object(*id).ok()?,
        other => other,
    };
    let title = info.as_dict().ok()?.get(b"Title").ok()?;
    let title = lopdf::decode_text_string(title).ok()?;
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// Lines trimmed, runs of blank lines as one, no trailing whitespace.
fn tidy(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut blank = false;
    for line in page.lines().map(str::trim_end) {
        if line.trim().is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line.trim_start());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pdf_gives_its_pages_text_and_its_title() {
        let bytes = ontoloop_testkit::pdf::tiny(
            "Audit report",
            &[
                &["The quarterly audit found seventeen open findings."],
                &["Remediation is due by March."],
            ],
        );
        let pdf = to_text(&bytes).expect("readable");
        assert_eq!(pdf.title.as_deref(), Some("Audit report"));
        assert!(
            pdf.text
                .contains("The quarterly audit found seventeen open findings."),
            "{:?}",
            pdf.text
        );
        assert!(
            pdf.text.contains("Remediation is due by March."),
            "{:?}",
            pdf.text
        );
    }

    #[test]
    fn what_is_not_a_pdf_is_refused_with_a_reason() {
        let reason = to_text(b"%PDF-1.4 but nothing after").expect_err("refused");
        assert!(reason.starts_with("not a readable PDF"), "{reason}");
        let empty = ontoloop_testkit::pdf::tiny("Blank", &[&[]]);
        let reason = to_text(&empty).expect_err("refused");
        assert!(reason.contains("no text"), "{reason}");
    }
}
