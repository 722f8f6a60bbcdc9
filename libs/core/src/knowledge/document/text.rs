//! The text of a page: header blocks at its top, headings, lists, tables, code and paragraphs.

use super::{Document, Field, Layout, Record, Section, field_line, item_field};

/// A Markdown ATX heading: its level and text.
pub(crate) fn atx_heading(line: &str) -> Option<(usize, &str)> {
    let t = line.trim();
    let level = t.chars().take_while(|&c| c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim();
    (!text.is_empty()).then_some((level, text))
}

/// A line of one punctuation character repeated (`=====`, `-----`, `~~~~`): an RST or setext
/// underline.
pub(crate) fn underline(line: &str) -> Option<char> {
    let t = line.trim_end();
    let first = t.chars().next()?;
    if t.len() < 3 || !"=-~^\"'`#*+:._".contains(first) || !t.chars().all(|c| c == first) {
        return None;
    }
    Some(first)
}

fn list_item(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start().len();
    let t = line.trim_start();
    for marker in ["- ", "* ", "+ ", "• "] {
        if let Some(rest) = t.strip_prefix(marker) {
            return Some((indent, rest.trim()));
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &t[digits..];
        if let Some(item) = rest.strip_prefix(". ").or(rest.strip_prefix(") ")) {
            return Some((indent, item.trim()));
        }
    }
    None
}

fn is_table_row(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.len() > 1
}

fn is_fence(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with("```") {
        Some("```")
    } else if t.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

/// Reads headings, header blocks, lists, tables, code and paragraphs of a text page.
pub(super) fn read_text(text: &str, doc: &mut Document) {
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    // Header blocks at the top: blank-line separated blocks whose every line is a field or a
    // continuation of one, each block a record (one stanza of a file of records each).
    loop {
        while at < lines.len() && lines[at].trim().is_empty() {
            at += 1;
        }
        let Some((block, next)) = header_block(&lines, at) else {
            break;
        };
        doc.records.push(block.record);
        // A field's text of several paragraphs is prose under its key, one section each.
        for (key, text) in block.texts {
            for paragraph in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
                doc.sections.push(Section {
                    headings: vec![key.clone()],
                    text: without_links(paragraph.trim()),
                });
            }
        }
        at = next;
    }
    let mut headings: Vec<(usize, String)> = Vec::new();
    // The levels RST gave its underline styles, in the order they were first seen.
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut items = Record {
        layout: Layout::Items,
        ..Record::default()
    };
    let mut lead_in: Option<String> = None;
    let mut table: Vec<&str> = Vec::new();
    while at < lines.len() {
        let line = lines[at];
        let trimmed = line.trim();
        let next = lines.get(at + 1).copied().unwrap_or("");
        // Tables.
        if is_table_row(line) {
            flush(doc, &headings, &mut paragraph, &mut lead_in);
            table.push(line);
            at += 1;
            continue;
        } else if !table.is_empty() {
            doc.records.extend(table_records(&table));
            table.clear();
        }
        // Code: fences, and the indented block after an RST `::` or a directive.
        if let Some(fence) = is_fence(line) {
            flush(doc, &headings, &mut paragraph, &mut lead_in);
            at += 1;
            while at < lines.len() && !lines[at].trim_start().starts_with(fence) {
                at += 1;
            }
            at += 1;
            continue;
        }
        if trimmed.starts_with(".. ") || trimmed == ".." {
            flush(doc, &headings, &mut paragraph, &mut lead_in);
            at = skip_indented(&lines, at + 1);
            continue;
        }
        // Headings: ATX, setext / RST underline (and an RST overline above).
        let underlined = !trimmed.is_empty()
            && underline(line).is_none()
            && underline(next).is_some_and(|_| next.trim().len() >= trimmed.chars().count().min(3))
            && list_item(line).is_none();
        let overlined = underline(line).is_some()
            && !next.trim().is_empty()
            && lines
                .get(at + 2)
                .and_then(|l| underline(l))
                .is_some_and(|c| Some(c) == underline(line));
        if let Some((level, title)) = atx_heading(line) {
            flush(doc, &headings, &mut paragraph, &mut lead_in);
            heading(doc, &mut headings, level, title);
            at += 1;
            continue;
        }
        if overlined || underlined {
            flush(doc, &headings, &mut paragraph, &mut lead_in);
            let (title, style, skip) = if overlined {
                (next.trim(), (underline(line).unwrap_or('='), true), 3)
            } else {
                (trimmed, (underline(next).unwrap_or('='), false), 2)
            };
            let level = match styles.iter().position(|s| *s == style) {
                Some(p) => p + 1,
                None => {
                    styles.push(style);
                    styles.len()
                }
            };
            heading(doc, &mut headings, level, title);
            at += skip;
            continue;
        }
        if underline(line).is_some() && paragraph.is_empty() {
            // A transition (`----`) or a stray underline.
            at += 1;
            continue;
        }
        // A list of `Key: value` items opening the page (under its title at most) is a header
        // block written as a list.
        if doc.sections.is_empty()
            && paragraph.is_empty()
            && items.fields.is_empty()
            && headings.len() <= 1
            && let Some((record, next)) = listed_header(&lines, at)
        {
            doc.records.push(record);
            at = next;
            continue;
        }
        // List items, each with its continuation lines.
        if let Some((indent, first)) = list_item(line) {
            if !paragraph.is_empty() {
                let text = paragraph.join(" ");
                paragraph.clear();
                let text = text.trim_end();
                match text.strip_suffix(':') {
                    Some(lead) => {
                        // The paragraph's last sentence introduces the list.
                        let cut = sentence_starts(lead).last().copied().unwrap_or(0);
                        let (before, last) = lead.split_at(cut);
                        if !before.trim().is_empty() {
                            doc.sections.push(Section {
                                headings: current(&headings),
                                text: before.trim().to_owned(),
                            });
                        }
                        lead_in = Some(last.trim().to_owned());
                    }
                    None => doc.sections.push(Section {
                        headings: current(&headings),
                        text: text.to_owned(),
                    }),
                }
            }
            let mut item = vec![first.to_owned()];
            at += 1;
            while at < lines.len() {
                let l = lines[at];
                let ind = l.len() - l.trim_start().len();
                if l.trim().is_empty() || ind <= indent || list_item(l).is_some() {
                    break;
                }
                item.push(l.trim().to_owned());
                at += 1;
            }
            let item = without_links(&item.join(" "));
            if let Some((key, value)) = item_field(&item) {
                items.fields.push(Field {
                    key: key.to_owned(),
                    values: vec![plain(value)],
                    line: item.clone(),
                });
                continue;
            }
            let text = match &lead_in {
                Some(lead) => format!("{lead}: {item}"),
                None => item,
            };
            doc.sections.push(Section {
                headings: current(&headings),
                text: sentence_end(&text),
            });
            continue;
        }
        if trimmed.is_empty() {
            flush(doc, &headings, &mut paragraph, &mut lead_in);
            at += 1;
            continue;
        }
        // A paragraph ending in `::` introduces an RST literal block.
        if trimmed.ends_with("::") {
            paragraph.push(&trimmed[..trimmed.len() - 1]);
            flush(doc, &headings, &mut paragraph, &mut lead_in);
            at = skip_indented(&lines, at + 1);
            continue;
        }
        if paragraph.is_empty() {
            lead_in = None;
        }
        paragraph.push(trimmed);
        at += 1;
    }
    if !table.is_empty() {
        doc.records.extend(table_records(&table));
    }
    flush(doc, &headings, &mut paragraph, &mut lead_in);
    if !items.fields.is_empty() {
        doc.records.push(items);
    }
}

/// A header block written as a list starting at `at` (`- Start Date: 2023-07-26`, `* Status:
/// accepted`): at least two items at the left margin, every one a `Key: value` whose key starts
/// with a letter, its continuation lines indented; the list ends at a blank line. Links are
/// read as their text and code marks dropped. A [`Layout::ListedHeader`] record, with the next
/// line's index.
fn listed_header(lines: &[&str], at: usize) -> Option<(Record, usize)> {
    let mut record = Record {
        layout: Layout::ListedHeader,
        ..Record::default()
    };
    let mut i = at;
    while i < lines.len() && !lines[i].trim().is_empty() {
        let (indent, first) = list_item(lines[i])?;
        if indent > 0 {
            return None;
        }
        let mut item = vec![first.to_owned()];
        i += 1;
        while i < lines.len()
            && lines[i].starts_with([' ', '\t'])
            && !lines[i].trim().is_empty()
            && list_item(lines[i]).is_none()
        {
            item.push(lines[i].trim().to_owned());
            i += 1;
        }
        let item = without_links(&item.join(" "));
        let (key, value) = item_field(&item)?;
        if !key.starts_with(char::is_alphabetic) {
            return None;
        }
        record.fields.push(Field {
            key: key.to_owned(),
            values: vec![plain(value)],
            line: item.clone(),
        });
    }
    (record.fields.len() >= 2).then_some((record, i))
}

/// A header block starting at `at`: at least two fields, every line a field or a continuation
/// (indented, or a line of white space inside a folded value); the block ends at a blank line.
/// With the next line's index.
pub(super) fn header_block(lines: &[&str], at: usize) -> Option<(Block, usize)> {
    let mut record = Record::default();
    let mut i = at;
    // Fields whose folded value runs to several paragraphs (a whole licence text, a long
    // description): each is a text of its own, not a value.
    let mut bodies: Vec<usize> = Vec::new();
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() {
            // A line of white space that a folded value goes on after is a paragraph break of
            // that value (RFC 822: a line starting with white space continues its field); any
            // other blank line ends the block.
            let goes_on = line.starts_with([' ', '\t'])
                && !record.fields.is_empty()
                && lines
                    .get(i + 1)
                    .is_some_and(|next| next.starts_with([' ', '\t']) && !next.trim().is_empty());
            if !goes_on {
                break;
            }
            let last = record.fields.len() - 1;
            if bodies.last() != Some(&last) {
                bodies.push(last);
            }
            if let Some(field) = record.fields.last_mut() {
                field.line.push_str("\n\n");
                if let Some(value) = field.values.last_mut() {
                    value.push_str("\n\n");
                }
            }
            i += 1;
            continue;
        }
        if let Some((key, value)) = field_line(line) {
            record.fields.push(Field {
                key: key.to_owned(),
                values: if value.is_empty() {
                    Vec::new()
                } else {
                    vec![unwrapped(value)]
                },
                line: line.trim().to_owned(),
            });
        } else if line.starts_with([' ', '\t'])
            && let Some(last) = record.fields.last_mut()
        {
            // A continuation line: the value goes on (a list of one item per line, or folded
            // text).
            let more = line.trim();
            if more != "." {
                let single = last.values.len() == 1;
                match last.values.last_mut() {
                    Some(value) if !value.ends_with(',') && single => {
                        if !value.ends_with('\n') {
                            value.push(' ');
                        }
                        value.push_str(&unwrapped(more));
                    }
                    _ => last.values.push(unwrapped(more)),
                }
            }
            if !last.line.ends_with('\n') {
                last.line.push(' ');
            }
            last.line.push_str(more);
        } else {
            return None;
        }
        i += 1;
    }
    let mut texts = Vec::new();
    for at in bodies.into_iter().rev() {
        let field = record.fields.remove(at);
        texts.insert(0, field);
    }
    record.fields.retain(|f| !f.values.is_empty());
    (record.fields.len() >= 2).then_some((
        Block {
            record,
            texts: texts
                .into_iter()
                .map(|f| (f.key, f.values.join("\n\n")))
                .collect(),
        },
        i,
    ))
}

/// A header block: its record, and the texts some of its fields hold (a field folded over
/// several paragraphs), each with its key.
pub(super) struct Block {
    pub record: Record,
    pub texts: Vec<(String, String)>,
}

fn skip_indented(lines: &[&str], mut at: usize) -> usize {
    while at < lines.len() && (lines[at].trim().is_empty() || lines[at].starts_with([' ', '\t'])) {
        at += 1;
    }
    at
}

fn heading(doc: &mut Document, headings: &mut Vec<(usize, String)>, level: usize, title: &str) {
    if doc.title.is_none() && headings.is_empty() {
        doc.title = Some(title.to_owned());
    }
    headings.retain(|(above, _)| *above < level);
    headings.push((level, title.to_owned()));
}

fn current(headings: &[(usize, String)]) -> Vec<String> {
    headings.iter().map(|(_, h)| h.clone()).collect()
}

fn flush(
    doc: &mut Document,
    headings: &[(usize, String)],
    paragraph: &mut Vec<&str>,
    lead_in: &mut Option<String>,
) {
    flush_paragraph(doc, headings, paragraph);
    *lead_in = None;
}

fn flush_paragraph(doc: &mut Document, headings: &[(usize, String)], paragraph: &mut Vec<&str>) {
    if paragraph.is_empty() {
        return;
    }
    let text = without_links(&paragraph.join(" "));
    paragraph.clear();
    // A paragraph that only introduces a list is read with each item, not alone.
    if text.trim_end().ends_with(':') {
        return;
    }
    doc.sections.push(Section {
        headings: current(headings),
        text,
    });
}

/// Byte offsets where the sentences of `text` start (after `.`, `!` or `?` and white space).
fn sentence_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace)
        {
            starts.push(i + 1);
        }
    }
    starts
}

/// Markdown links as their text: inline `[text](target)` and reference `[text][ref]`,
/// `[text][]`; any other bracket stays as written.
pub(super) fn without_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let link = after.find(']').and_then(|close| {
            let tail = &after[close + 1..];
            let target_end = match tail.chars().next() {
                Some('(') => tail.find(')')?,
                Some('[') => tail.find(']')?,
                _ => return None,
            };
            Some((close, close + 1 + target_end + 1))
        });
        match link {
            Some((close, end)) if !after[..close].contains('[') => {
                out.push_str(&after[..close]);
                rest = &after[end..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` ending as a sentence, so a list item is not run into the next one.
fn sentence_end(text: &str) -> String {
    let t = text.trim_end();
    if t.ends_with(['.', '!', '?']) {
        t.to_owned()
    } else {
        format!("{t}.")
    }
}

/// A Markdown table's rows as records ([`Layout::Keyed`]): the first cell of a row names its
/// subject, every other cell is a field under its column's header. A table without a header row
/// of names (a row of badges, a grid of images) gives none.
fn table_records(lines: &[&str]) -> Vec<Record> {
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|line| {
            line.trim()
                .trim_matches('|')
                .split('|')
                .map(|cell| plain(cell.trim()))
                .collect()
        })
        .filter(|cells: &Vec<String>| {
            !cells
                .iter()
                .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
        })
        .collect();
    let Some((header, body)) = rows.split_first() else {
        return Vec::new();
    };
    let mut records = Vec::new();
    for row in body {
        let Some(subject) = row.first().filter(|s| !s.is_empty() && !is_blank_cell(s)) else {
            continue;
        };
        let mut record = Record {
            layout: Layout::Keyed,
            subject: Some(subject.clone()),
            ..Record::default()
        };
        for (column, cell) in header.iter().zip(row.iter()).skip(1) {
            if is_blank_cell(cell) || column.is_empty() {
                continue;
            }
            record.fields.push(Field {
                key: column.clone(),
                values: vec![cell.clone()],
                line: format!("{subject} | {column}: {cell}"),
            });
        }
        if !record.fields.is_empty() {
            records.push(record);
        }
    }
    records
}

/// A table cell that states nothing: empty, or a dash or `N/A` where a value would be.
fn is_blank_cell(cell: &str) -> bool {
    let c = cell.trim();
    c.is_empty() || c.chars().all(|ch| matches!(ch, '-' | '–' | '—')) || c == "N/A" || c == "n/a"
}

/// A header field's value as written (RFC 822 headers are plain text: `Title: Syntax for
/// ``Union[]``` keeps its marks), unless markup wraps all of it (`Status: **Accepted**`, a
/// value that is one link), which is dropped.
pub(crate) fn unwrapped(value: &str) -> String {
    let v = value.trim();
    for mark in ["**", "__", "``", "`", "*", "_"] {
        if let Some(inner) = v.strip_prefix(mark).and_then(|r| r.strip_suffix(mark))
            && !inner.is_empty()
            && !inner.contains(mark)
        {
            return inner.trim().to_owned();
        }
    }
    if v.starts_with('[') && v.ends_with(')') && !v[1..].contains('[') {
        return plain(v);
    }
    v.to_owned()
}

/// A field's value as plain text: links as their text, emphasis and code marks dropped
/// (`**Accepted**`, `` `v1.2` ``, `[Ana](mailto:ana@example.org)`); the line keeps them.
pub(crate) fn plain(value: &str) -> String {
    without_links(value)
        .replace("**", "")
        .replace("__", "")
        .replace('`', "")
        .trim()
        .to_owned()
}
