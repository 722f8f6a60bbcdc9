//! Rows of `fact`.

super::table! {
    "fact";
    key { tenant: String, id: i64 }
    pub entity: String,
    pub predicate: String,
    #[sea_orm(column_type = "Text")]
    pub object: String,
    pub source_id: String,
    pub source_version: i64,
    pub seen_version: i64,
    pub origin: String,
    pub authority: i32,
    pub extracted_at: ChronoDateTimeUtc,
    pub valid_from: ChronoDateTimeUtc,
    pub valid_to: Option<ChronoDateTimeUtc>,
    pub extractor: String,
    pub confidence: f64,
    #[sea_orm(column_type = "Text")]
    pub acl: String,
    /// The knowledge version whose commit last wrote this row (0: before versions were kept).
    pub changed_in: i64,
    /// Where the value holds (`region=EU`, `key=value` pairs joined by `, `); empty:
    /// everywhere.
    #[sea_orm(column_type = "Text")]
    pub scope: String,
}
