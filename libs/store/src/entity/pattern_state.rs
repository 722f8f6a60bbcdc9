//! Rows of `pattern_state`.

super::table! {
    "pattern_state", Eq;
    key { tenant: String, kind: String, key: String }
    pub status: String,
    pub action: String,
    pub signal_to_heal_ms: Option<i64>,
    pub updated_at: ChronoDateTimeUtc,
}
