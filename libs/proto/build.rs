//! Compiles `proto/ontoloop/v1/*.proto` with the vendored `protoc`, so a fresh machine needs no
//! system package.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not when it was compiled: a copy of the checkout elsewhere
    // sharing the target folder would otherwise compile the first copy's files.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let protos: Vec<PathBuf> = ["common", "retrieval", "firewall", "telemetry", "analyst"]
        .iter()
        .map(|name| root.join(format!("ontoloop/v1/{name}.proto")))
        .collect();
    println!("cargo:rerun-if-changed=build.rs");
    for proto in &protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let well_known = protoc_bin_vendored::include_path()?;
    // SAFETY: build scripts are single-threaded; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("PROTOC", protoc) };
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut build = tonic_prost_build::configure()
        // A request that does not decode is the caller's error, not the service's.
        .codec_path("crate::codec::StrictCodec")
        .file_descriptor_set_path(out_dir.join("ontoloop_descriptor.bin"))
        // Weights print in a stable order.
        .btree_map(".ontoloop.v1.PlateItem.weights");
    for message in JSON_MESSAGES {
        build = build.type_attribute(
            format!(".ontoloop.v1.{message}"),
            "#[derive(serde::Serialize, schemars::JsonSchema)]",
        );
    }
    for (field, attribute) in JSON_FIELDS {
        build = build.field_attribute(format!(".ontoloop.v1.{field}"), attribute);
    }
    build.compile_protos(&protos, &[root, well_known])?;
    Ok(())
}

/// The replies that are also given as JSON (the CLI's `--json`, the MCP tools' structured
/// answers, whose output schemas are these types' JSON schemas): one shape per answer.
const JSON_MESSAGES: &[&str] = &[
    "Answer",
    "Evidence",
    "Hedge",
    "Hop",
    "Passage",
    "ScopedValue",
    "CitationResolution",
    "ValidateResponse",
    "ClaimVerdict",
    "Claim",
    "ClaimStep",
    "BlockReason",
    "Coverage",
    "SignalAck",
    "PlateResponse",
    "PlateItem",
    "DimensionCount",
    "ListPatternsResponse",
    "Pattern",
    "ProposedUpdate",
    "SearchResponse",
    "SearchHit",
    "MentionedEntity",
];

/// Fields whose JSON is not their prost type's: enums by their protobuf names (`crate::json`),
/// instants in RFC 3339, an absent similarity left out, a reason code listing the codes.
const JSON_FIELDS: &[(&str, &str)] = &[
    ("Answer.status", ENUM_ANSWER_STATUS),
    ("CitationResolution.status", ENUM_CITATION_STATUS),
    ("ValidateResponse.overall", ENUM_VERDICT),
    ("ClaimVerdict.verdict", ENUM_VERDICT),
    ("SignalAck.severity", ENUM_SEVERITY),
    ("Pattern.severity", ENUM_SEVERITY),
    ("SearchResponse.ranking", ENUM_PASSAGE_RANKING),
    ("Evidence.valid_from", INSTANT),
    ("Evidence.valid_to", INSTANT),
    ("Evidence.extracted_at", INSTANT),
    ("PlateItem.created_at", INSTANT),
    ("Pattern.first_seen", INSTANT),
    ("Pattern.last_seen", INSTANT),
    ("ProposedUpdate.created_at", INSTANT),
    (
        "Passage.similarity",
        r#"#[serde(skip_serializing_if = "Option::is_none")]"#,
    ),
    (
        "BlockReason.code",
        "#[schemars(transform = crate::json::reason_codes)]",
    ),
];

const ENUM_ANSWER_STATUS: &str =
    r#"#[serde(serialize_with = "crate::json::answer_status")] #[schemars(with = "String")]"#;
const ENUM_CITATION_STATUS: &str =
    r#"#[serde(serialize_with = "crate::json::citation_status")] #[schemars(with = "String")]"#;
const ENUM_VERDICT: &str =
    r#"#[serde(serialize_with = "crate::json::verdict")] #[schemars(with = "String")]"#;
const ENUM_PASSAGE_RANKING: &str =
    r#"#[serde(serialize_with = "crate::json::passage_ranking")] #[schemars(with = "String")]"#;
const ENUM_SEVERITY: &str =
    r#"#[serde(serialize_with = "crate::json::severity")] #[schemars(with = "String")]"#;
const INSTANT: &str =
    r#"#[serde(serialize_with = "crate::json::instant")] #[schemars(with = "Option<String>")]"#;
