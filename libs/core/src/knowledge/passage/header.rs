//! The header block at the top of a text page (RFC 822 style `Key: value` lines, with
//! continuation lines), as passages see it: not a passage itself but the label of the page's
//! passages, by the fields that name the document (an identifier first, `PEP: 8`, then a name
//! or a title); a field whose folded value runs over several paragraphs (a long description) is
//! text, each paragraph a passage under the field's key. The document parser reads the same
//! lines as the page's records.

/// A key longer than this many words is prose, not a field name.
const MAX_KEY_WORDS: usize = 5;

/// Words of a key that make its value a name of the document (`Title`, `Name`, `kep-number`).
const NAMING_KEY_WORDS: &[&str] = &["name", "title", "id", "subject", "number"];

/// An identifier is one token of at most this many characters, with a digit (`8`, `0594`,
/// `KEP-12`).
const MAX_ID_CHARS: usize = 24;

/// A naming value longer than this many words is a text, not a name.
const MAX_NAME_WORDS: usize = 16;

/// What passages make of the header blocks at the top of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Header {
    /// The first line after the blocks.
    pub end: usize,
    /// The label of every passage of the page: the naming fields of the first block
    /// (`PEP 387: Backwards Compatibility Policy`); `None` when no field names the document.
    pub label: Option<String>,
    /// Paragraphs of fields folded over several paragraphs: the key, and the paragraph's byte
    /// span in the body (trimmed).
    pub texts: Vec<(String, usize, usize)>,
}

/// One field of a block as read.
struct Field {
    key: String,
    /// Its value, continuation lines joined by a space (the first paragraph only when folded).
    value: String,
    /// Byte spans of its value's paragraphs.
    paragraphs: Vec<(usize, usize)>,
    /// A line of white space went before the next continuation: it starts a new paragraph.
    broken: bool,
}

impl Field {
    /// A value folded over several paragraphs is a text, not a value.
    fn is_text(&self) -> bool {
        self.paragraphs.len() > 1
    }
}

/// The header blocks at the top of the page whose lines are `lines` (each line's byte offset in
/// the body, and the line with its end of line): blank-line separated blocks of at least two
/// fields, every line a field or a continuation of one. `None` when the page does not start
/// with one.
pub(super) fn header(lines: &[(usize, &str)]) -> Option<Header> {
    let mut at = 0;
    let mut found: Option<Header> = None;
    loop {
        while lines.get(at).is_some_and(|(_, l)| l.trim().is_empty()) {
            at += 1;
        }
        let Some((fields, next)) = block(lines, at) else {
            break;
        };
        let header = found.get_or_insert_with(|| Header {
            label: label(&fields),
            ..Header::default()
        });
        header.end = next;
        for field in fields.iter().filter(|f| f.is_text()) {
            header.texts.extend(
                field
                    .paragraphs
                    .iter()
                    .map(|&(from, to)| (field.key.clone(), from, to)),
            );
        }
        at = next;
    }
    found
}

/// The block of fields starting at line `at`, and the line after it.
fn block(lines: &[(usize, &str)], at: usize) -> Option<(Vec<Field>, usize)> {
    let mut fields: Vec<Field> = Vec::new();
    let mut i = at;
    while let Some(&(start, raw)) = lines.get(i) {
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            // A line of white space a folded value goes on after breaks that value into
            // paragraphs; any other blank line ends the block.
            let goes_on = line.starts_with([' ', '\t'])
                && lines.get(i + 1).is_some_and(|(_, next)| {
                    next.starts_with([' ', '\t']) && !next.trim().is_empty()
                });
            match fields.last_mut() {
                Some(field) if goes_on => field.broken = true,
                _ => break,
            }
            i += 1;
            continue;
        }
        if let Some((key, value_at)) = field_line(line) {
            let value = line[value_at..].trim();
            let end = start + value_at + line[value_at..].trim_end().len();
            fields.push(Field {
                key: key.to_owned(),
                value: value.to_owned(),
                paragraphs: if value.is_empty() {
                    Vec::new()
                } else {
                    vec![(start + value_at, end)]
                },
                broken: false,
            });
        } else if line.starts_with([' ', '\t'])
            && let Some(field) = fields.last_mut()
        {
            let more = line.trim();
            let from = start + (line.len() - line.trim_start().len());
            let to = start + line.trim_end().len();
            if more != "." {
                match field.paragraphs.last_mut() {
                    Some(paragraph) if !field.broken => paragraph.1 = to,
                    _ => field.paragraphs.push((from, to)),
                }
                if field.paragraphs.len() == 1 {
                    if !field.value.is_empty() {
                        field.value.push(' ');
                    }
                    field.value.push_str(more);
                }
            }
            field.broken = false;
        } else {
            return None;
        }
        i += 1;
    }
    let values = fields
        .iter()
        .filter(|f| !f.is_text() && !f.value.is_empty())
        .count();
    (values >= 2).then_some((fields, i))
}

/// `Key: value` with a field name as key (a few words of letters, digits, `-`, `_`, `.` and `/`,
/// starting with a letter); the value may be empty (continuation lines follow). The key and
/// where the value starts.
fn field_line(line: &str) -> Option<(&str, usize)> {
    if line.starts_with([' ', '\t']) {
        return None;
    }
    let colon = line.find(':')?;
    let (key, value) = (line[..colon].trim(), &line[colon + 1..]);
    let key_ok = key.chars().next().is_some_and(char::is_alphabetic)
        && key.split_whitespace().count() <= MAX_KEY_WORDS
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ' ' | '/'));
    if !key_ok || value.starts_with("//") || !(value.is_empty() || value.starts_with([' ', '\t'])) {
        return None;
    }
    let lead = value.len() - value.trim_start().len();
    Some((key, colon + 1 + lead))
}

/// The label of a block's fields: its identifier (a first field of a one-word key and a
/// one-token value with a digit, `PEP 387`), then the values of the fields a key names it by (`Title`,
/// `Name`), as `PEP 387: Backwards Compatibility Policy`.
fn label(fields: &[Field]) -> Option<String> {
    let id = fields.first().filter(|f| {
        f.key.chars().all(char::is_alphabetic)
            && f.value.chars().any(|c| c.is_ascii_digit())
            && !f.value.contains(char::is_whitespace)
            && f.value.chars().count() <= MAX_ID_CHARS
    });
    let names: Vec<&str> = fields
        .iter()
        .filter(|f| !f.is_text() && !f.value.is_empty())
        .filter(|f| id.is_none_or(|id| !std::ptr::eq(*f, id)))
        .filter(|f| {
            f.value.split_whitespace().count() <= MAX_NAME_WORDS
                && f.key
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| NAMING_KEY_WORDS.contains(&w.to_lowercase().as_str()))
        })
        .map(|f| f.value.as_str())
        .collect();
    let id = id.map(|f| format!("{} {}", f.key, f.value));
    match (id, names.is_empty()) {
        (None, true) => None,
        (None, false) => Some(names.join(" — ")),
        (Some(id), true) => Some(id),
        (Some(id), false) => Some(format!("{id}: {}", names.join(" — "))),
    }
}
