//! How the replies read as JSON (the CLI's `--json`, the MCP tools' structured answers): the
//! generated types derive `serde::Serialize` and `schemars::JsonSchema` (`build.rs` names them),
//! and the fields whose JSON is not their prost type's are written through these functions.
//! Enum values keep their protobuf names (`ANSWER_STATUS_ANSWERED`, `VERDICT_BLOCK`), so a reader
//! of both APIs sees one vocabulary; a citation's status is the one exception, read as a word
//! (`current`, `moved`, `revised`, `gone`).

use ontoloop_core::knowledge::firewall::ReasonCode;
use serde::Serializer;

use crate::v1;

/// An instant in RFC 3339; none when absent or out of range.
pub fn rfc3339(ts: Option<&prost_types::Timestamp>) -> Option<String> {
    let ts = ts?;
    chrono::DateTime::from_timestamp(ts.seconds, u32::try_from(ts.nanos).unwrap_or_default())
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

/// A citation status as people and agents read it: `current`, `moved`, `revised` or `gone`.
pub fn citation_status_name(status: i32) -> String {
    v1::CitationStatus::try_from(status)
        .map(|s| s.as_str_name().trim_start_matches("CITATION_STATUS_"))
        .unwrap_or("UNKNOWN")
        .to_lowercase()
}

/// The protobuf name of an enum value, or `PREFIX_<number>` for one this build does not know.
fn enum_name<E: TryFrom<i32>>(
    value: i32,
    prefix: &str,
    name: impl Fn(&E) -> &'static str,
) -> String {
    E::try_from(value)
        .map(|e| name(&e).to_owned())
        .unwrap_or_else(|_| format!("{prefix}_{value}"))
}

/// `Answer.status` by name.
pub(crate) fn answer_status<S: Serializer>(value: &i32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&enum_name(
        *value,
        "ANSWER_STATUS",
        v1::AnswerStatus::as_str_name,
    ))
}

/// `CitationResolution.status` as a word.
pub(crate) fn citation_status<S: Serializer>(value: &i32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&citation_status_name(*value))
}

/// A verdict by name.
pub(crate) fn verdict<S: Serializer>(value: &i32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&enum_name(*value, "VERDICT", v1::Verdict::as_str_name))
}

/// A passage ranking by name.
pub(crate) fn passage_ranking<S: Serializer>(value: &i32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&enum_name(
        *value,
        "PASSAGE_RANKING",
        v1::PassageRanking::as_str_name,
    ))
}

/// A severity by name.
pub(crate) fn severity<S: Serializer>(value: &i32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&enum_name(*value, "SEVERITY", v1::Severity::as_str_name))
}

/// An instant in RFC 3339, or null.
pub(crate) fn instant<S: Serializer>(
    value: &Option<prost_types::Timestamp>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match rfc3339(value.as_ref()) {
        Some(text) => s.serialize_some(&text),
        None => s.serialize_none(),
    }
}

/// `BlockReason.code`'s schema: its description lists the codes the firewall gives, read from
/// the codes themselves (the one place they are written).
pub(crate) fn reason_codes(schema: &mut schemars::Schema) {
    let codes: Vec<&str> = ReasonCode::ALL.iter().map(|code| code.name()).collect();
    schema.insert(
        "description".to_owned(),
        format!("The rule that blocked the claim: {}.", codes.join(", ")).into(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_read_as_json_with_enum_names_and_instants() {
        let answer = v1::Answer {
            status: v1::AnswerStatus::Abstained as i32,
            evidence: vec![v1::Evidence {
                valid_from: Some(prost_types::Timestamp {
                    seconds: 0,
                    nanos: 0,
                }),
                ..Default::default()
            }],
            passages: vec![v1::Passage::default()],
            ..Default::default()
        };
        let json = serde_json::to_value(&answer).expect("serialises");
        assert_eq!(json["status"], "ANSWER_STATUS_ABSTAINED");
        assert_eq!(json["evidence"][0]["valid_from"], "1970-01-01T00:00:00Z");
        assert!(json["evidence"][0]["valid_to"].is_null());
        assert!(json["passages"][0].get("similarity").is_none());
        let citation = v1::CitationResolution {
            status: v1::CitationStatus::Moved as i32,
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&citation).expect("serialises")["status"],
            "moved"
        );
    }

    #[test]
    fn the_reason_code_schema_lists_every_code() {
        let schema = schemars::schema_for!(v1::BlockReason);
        let description = schema
            .as_value()
            .pointer("/properties/code/description")
            .and_then(|d| d.as_str())
            .unwrap_or_default()
            .to_owned();
        for code in ReasonCode::ALL {
            assert!(description.contains(code.name()), "{description}");
        }
    }
}
