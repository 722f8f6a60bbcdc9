//! Records of data documents: YAML, TOML and JSON, and files of header blocks only.

use serde_json::Value;

use super::text::header_block;
use super::{Field, Layout, MAX_DEPTH, MAX_LIST_VALUES, Record, field_line, is_key};

/// Whether `text` is header blocks and nothing else (records of `Key: value` stanzas, read
/// verbatim rather than as YAML, which would take `1.10` for a number).
pub(super) fn only_header_blocks(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    loop {
        while at < lines.len() && lines[at].trim().is_empty() {
            at += 1;
        }
        if at == lines.len() {
            return true;
        }
        match header_block(&lines, at) {
            // A field holding a text of several paragraphs makes the page prose as well.
            Some((block, _)) if !block.texts.is_empty() => return false,
            Some((_, next)) => {
                // Indented list items or keys are YAML's nesting, not folded values.
                let nested = lines[at..next].iter().any(|l| {
                    l.starts_with([' ', '\t'])
                        && (l.trim_start().starts_with("- ")
                            || field_line(l.trim_start()).is_some())
                });
                if nested {
                    return false;
                }
                at = next;
            }
            None => return false,
        }
    }
}

/// YAML numbers as the page wrote them: a value the parser read as a number (`1.10` as 1.1)
/// is replaced by the text after its key on the line that states it.
pub(super) fn verbatim(mut records: Vec<Record>, source: &str) -> Vec<Record> {
    for field in records.iter_mut().flat_map(|r| r.fields.iter_mut()) {
        let leaf = field.key.rsplit(' ').next().unwrap_or(&field.key);
        for value in &mut field.values {
            let Ok(number) = value.parse::<f64>() else {
                continue;
            };
            let raw = source.lines().find_map(|line| {
                let line = line.trim();
                let rest = match line.strip_prefix("- ") {
                    Some(item) => item,
                    None => line.strip_prefix(leaf)?.strip_prefix(':')?,
                };
                let raw = rest.split('#').next().unwrap_or("").trim();
                (raw.parse::<f64>().ok() == Some(number)).then(|| raw.to_owned())
            });
            if let Some(raw) = raw {
                *value = raw;
            }
        }
    }
    records
}

/// Records of a JSON value: an object is one record (its nested objects' keys joined), an
/// array of objects one record per object; scalars and arrays of scalars as a field's values.
/// An object whose entries are records of one kind (`{"v20": {"start": ..}, "v22": {..}}`) is
/// one record per entry, its key naming the subject ([`Layout::Keyed`]); such an object nested
/// in another is read the same way, apart from the fields around it.
pub(super) fn records_of(value: &Value) -> Vec<Record> {
    let mut records = Vec::new();
    collect(value, 0, &mut records);
    records
}

fn collect(value: &Value, depth: usize, out: &mut Vec<Record>) {
    match value {
        Value::Object(map) if keyed_records(map) => {
            for (key, entry) in map {
                let mut record = Record {
                    layout: Layout::Keyed,
                    subject: Some(key.trim().to_owned()),
                    ..Record::default()
                };
                flatten(entry, "", depth + 1, &mut record.fields, out);
                for field in &mut record.fields {
                    field.line = format!("{} {}", key.trim(), field.line);
                }
                if !record.fields.is_empty() {
                    out.push(record);
                }
            }
        }
        Value::Object(_) => {
            let mut record = Record::default();
            let mut nested = Vec::new();
            flatten(value, "", depth, &mut record.fields, &mut nested);
            if !record.fields.is_empty() {
                out.push(record);
            }
            out.extend(nested);
        }
        Value::Array(items) => {
            for item in items.iter().filter(|i| i.is_object()) {
                collect(item, depth, out);
            }
        }
        _ => {}
    }
}

/// Whether a list is records of one kind named by their first field (`releases:` of
/// `- releaseCycle: "3.12"` items, each with its dates): two or more objects, each opening with
/// the same key, whose values are short scalars, each another, and sharing most of their field
/// names as the entries of [`keyed_records`] do.
pub(super) fn listed_records(items: &[Value]) -> bool {
    let mut map = serde_json::Map::new();
    let mut first_key: Option<&str> = None;
    for item in items {
        let Value::Object(fields) = item else {
            return false;
        };
        let Some((key, Value::String(name))) = fields.iter().next() else {
            return false;
        };
        if *first_key.get_or_insert(key) != key.as_str() || map.contains_key(name.trim()) {
            return false;
        }
        let rest: serde_json::Map<String, Value> = fields
            .iter()
            .skip(1)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        map.insert(name.trim().to_owned(), Value::Object(rest));
    }
    keyed_records(&map)
}

/// One item of a list of [`listed_records`]: a record about the subject its first field names
/// ([`Layout::Keyed`], as an entry of a mapping of records is about its key).
fn listed(item: &Value, depth: usize, out: &mut Vec<Record>) {
    let Value::Object(fields) = item else {
        return;
    };
    let Some((key, Value::String(name))) = fields.iter().next() else {
        return;
    };
    let name = name.trim();
    let rest: serde_json::Map<String, Value> = fields
        .iter()
        .skip(1)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut record = Record {
        layout: Layout::Keyed,
        subject: Some(name.to_owned()),
        ..Record::default()
    };
    flatten(&Value::Object(rest), "", depth, &mut record.fields, out);
    for field in &mut record.fields {
        field.line = format!("{key}: {name}, {}", field.line);
    }
    if !record.fields.is_empty() {
        out.push(record);
    }
}

/// Whether an object's entries are records of one kind: two or more, every one an object of
/// fields, keyed by a short name, and sharing their field names (most of a record's keys are
/// another record's too). Sections of one thing (`metadata`, `spec`) share few.
pub(super) fn keyed_records(map: &serde_json::Map<String, Value>) -> bool {
    if map.len() < 2 {
        return false;
    }
    let mut seen: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (key, entry) in map {
        let Value::Object(fields) = entry else {
            return false;
        };
        if fields.is_empty() || key.trim().is_empty() || key.split_whitespace().count() > 8 {
            return false;
        }
        for field in fields.keys() {
            *seen.entry(field.as_str()).or_default() += 1;
        }
    }
    let shared: f64 = map
        .values()
        .filter_map(Value::as_object)
        .map(|fields| {
            fields.keys().filter(|k| seen[k.as_str()] >= 2).count() as f64 / fields.len() as f64
        })
        .sum();
    shared / map.len() as f64 >= 0.5
}

/// The fields of an object, nested keys joined by a space; records of one kind inside it go to
/// `records` instead.
fn flatten(
    value: &Value,
    prefix: &str,
    depth: usize,
    out: &mut Vec<Field>,
    records: &mut Vec<Record>,
) {
    let Value::Object(map) = value else {
        return;
    };
    for (key, value) in map {
        let key = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix} {key}")
        };
        match value {
            Value::Object(inner) if depth < MAX_DEPTH && keyed_records(inner) => {
                collect(value, depth + 1, records);
            }
            Value::Object(_) if depth < MAX_DEPTH => {
                flatten(value, &key, depth + 1, out, records);
            }
            Value::Array(items) if depth < MAX_DEPTH && listed_records(items) => {
                for item in items {
                    listed(item, depth + 1, records);
                }
            }
            Value::Array(items) => {
                let values: Vec<String> = items
                    .iter()
                    .filter_map(scalar)
                    .take(MAX_LIST_VALUES)
                    .collect();
                if !values.is_empty() {
                    out.push(Field {
                        line: format!("{key}: {}", values.join(", ")),
                        key,
                        values,
                    });
                }
            }
            other => {
                if let Some(v) = scalar(other) {
                    out.push(Field {
                        line: format!("{key}: {v}"),
                        key,
                        values: vec![v],
                    });
                }
            }
        }
    }
}

fn scalar(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// YAML as JSON, every scalar as the string the page wrote (a version `1.10` stays `1.10`).
pub(super) fn yaml_to_json(value: serde_yaml::Value, depth: usize) -> Value {
    use serde_yaml::Value as Y;
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::String(b.to_string()),
        Y::Number(n) => Value::String(n.to_string()),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) if depth < MAX_DEPTH + 2 => Value::Array(
            items
                .into_iter()
                .map(|v| yaml_to_json(v, depth + 1))
                .collect(),
        ),
        Y::Mapping(map) if depth < MAX_DEPTH + 2 => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| {
                    let key = match k {
                        Y::String(s) => s,
                        Y::Number(n) => n.to_string(),
                        Y::Bool(b) => b.to_string(),
                        _ => return None,
                    };
                    Some((key, yaml_to_json(v, depth + 1)))
                })
                .collect(),
        ),
        Y::Tagged(tagged) => yaml_to_json(tagged.value, depth),
        _ => Value::Null,
    }
}

/// A YAML document: its first lines (comments aside) are `key:` mappings and it has no line of
/// prose outside them; two keys at the top, or one holding a nested mapping.
pub(super) fn looks_like_yaml(text: &str) -> bool {
    let mut keys = 0;
    let mut nested = 0;
    for line in text.lines() {
        let t = line.trim_end();
        if t.is_empty() || t.starts_with('#') || t == "---" || t == "..." {
            continue;
        }
        if line.starts_with(' ') || line.starts_with('-') {
            let inner = line.trim_start().trim_start_matches("- ");
            if inner.split_once(':').is_some_and(|(key, rest)| {
                is_key(key) && (rest.is_empty() || rest.starts_with(' '))
            }) {
                nested += 1;
            }
            continue;
        }
        match t.split_once(':') {
            Some((key, rest))
                if is_key(key)
                    && !key.contains(' ')
                    && (rest.is_empty() || rest.starts_with(' ')) =>
            {
                keys += 1;
            }
            _ => return false,
        }
    }
    keys >= 2 || (keys == 1 && nested >= 2)
}

pub(super) fn yaml_documents(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            parts.push(&text[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// A TOML document: `key = value` lines and `[table]` headers, nothing else.
pub(super) fn looks_like_toml(text: &str) -> bool {
    let mut assignments = 0;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.starts_with('[') && t.ends_with(']') {
            continue;
        }
        match t.split_once('=') {
            Some((key, _)) if is_key(key.trim().trim_matches('"')) => assignments += 1,
            _ => return false,
        }
    }
    assignments >= 2
}
