//! Rows of `page_version`.

super::table! {
    "page_version";
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub doc_id: String,
    pub version: i64,
    #[sea_orm(column_type = "Text")]
    pub title: String,
    pub origin: String,
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub content_hash: String,
    pub updated_at: ChronoDateTimeUtc,
    #[sea_orm(column_type = "Text")]
    pub acl: String,
    pub confidence: f64,
    /// The knowledge version whose commit last wrote this row (0: before versions were kept).
    pub changed_in: i64,
    /// A tombstone: the page was deleted at `updated_at`.
    pub deleted: bool,
    /// When the version takes effect, if later than `updated_at` (announced ahead of time).
    pub effective_from: Option<ChronoDateTimeUtc>,
}
