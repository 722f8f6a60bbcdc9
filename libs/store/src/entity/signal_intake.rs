//! Rows of `signal_intake`.

super::table! {
    "signal_intake", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub idempotency_key: String,
    pub signal_type: String,
    pub subject: String,
    pub agent_id: String,
    #[sea_orm(column_type = "Text")]
    pub query: String,
    pub received_at: ChronoDateTimeUtc,
    /// The message to publish (JSON), written with the row.
    #[sea_orm(column_type = "Text", nullable)]
    pub body: Option<String>,
    /// When the broker confirmed the message; empty while it waits in the outbox.
    pub published_at: Option<ChronoDateTimeUtc>,
    /// A publisher's lease on the row while it publishes it.
    pub claimed_until: Option<ChronoDateTimeUtc>,
    /// The acknowledged request's W3C trace context (a JSON object of `traceparent`,
    /// `tracestate`), so a later publish continues its trace; empty without one.
    #[sea_orm(column_type = "Text", nullable)]
    pub trace_context: Option<String>,
    /// When the analyst recorded the signal.
    pub delivered_at: Option<ChronoDateTimeUtc>,
}
