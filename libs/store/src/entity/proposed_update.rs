//! Rows of `proposed_update`.

super::table! {
    "proposed_update";
    key { id: String }
    pub tenant: String,
    pub pattern_id: String,
    pub signal_type: String,
    pub source: String,
    pub domain: String,
    pub entity: String,
    pub predicate: String,
    #[sea_orm(column_type = "Text")]
    pub before: String,
    #[sea_orm(column_type = "Text")]
    pub after: String,
    pub confidence: f64,
    pub confidence_variance: f64,
    pub impact_radius: i32,
    #[sea_orm(column_type = "Text")]
    pub affected_queries: String,
    #[sea_orm(column_type = "Text")]
    pub sources: String,
    pub priority: f64,
    pub reason: String,
    pub status: String,
    #[sea_orm(column_type = "Text")]
    pub applied_value: String,
    pub created_at: ChronoDateTimeUtc,
    pub queued_at: ChronoDateTimeUtc,
    pub applied_at: Option<ChronoDateTimeUtc>,
}
