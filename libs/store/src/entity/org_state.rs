//! Rows of `org_state`.

super::table! {
    "org_state", Eq;
    key { tenant: String }
    pub version: i64,
    pub updated_at: ChronoDateTimeUtc,
}
