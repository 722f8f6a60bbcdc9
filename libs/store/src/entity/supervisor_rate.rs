//! Rows of `supervisor_rate`.

super::table! {
    "supervisor_rate";
    key { tenant: String, signal_type: String, source: String, domain: String }
    pub rate: f64,
    pub approvals: i64,
    pub rejections: i64,
    pub updated_at: ChronoDateTimeUtc,
}
