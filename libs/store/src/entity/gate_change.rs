//! Rows of `gate_change`.

super::table! {
    "gate_change", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub kind: String,
    pub status: String,
    #[sea_orm(column_type = "Text")]
    pub event: String,
    pub replayed: i32,
    #[sea_orm(column_type = "Text")]
    pub differences: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub previous: Option<String>,
    pub created_at: ChronoDateTimeUtc,
    pub decided_at: Option<ChronoDateTimeUtc>,
    pub decided_by: String,
}
