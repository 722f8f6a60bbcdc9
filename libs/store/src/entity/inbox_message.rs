//! Rows of `inbox_message`.

super::table! {
    "inbox_message", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub queue: String,
    pub message_id: String,
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub received_at: ChronoDateTimeUtc,
}
