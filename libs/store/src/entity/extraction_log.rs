//! Rows of `extraction_log`.

super::table! {
    "extraction_log", Eq;
    key { tenant: String, doc_id: String }
    pub version: i64,
    pub extracted_at: ChronoDateTimeUtc,
    /// The knowledge version whose commit last wrote this row (0: before versions were kept).
    pub changed_in: i64,
}
