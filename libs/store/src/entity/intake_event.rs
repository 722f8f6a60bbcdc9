//! Rows of `intake_event`.

super::table! {
    "intake_event", Eq;
    #[sea_orm(primary_key)]
    pub seq: i64,
    pub tenant: String,
    /// The number the tenant sees (unique per tenant); `seq` is only the row's key.
    pub tenant_seq: i64,
    pub idempotency_key: Option<String>,
    pub kind: String,
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub received_at: ChronoDateTimeUtc,
    pub state: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub detail: Option<String>,
    /// When the broker confirmed the event's message; empty while it waits in the outbox.
    pub published_at: Option<ChronoDateTimeUtc>,
    /// A publisher's lease on the row while it publishes it.
    pub claimed_until: Option<ChronoDateTimeUtc>,
    /// The acknowledged request's W3C trace context (a JSON object of `traceparent`,
    /// `tracestate`), so a later publish continues its trace; empty without one.
    #[sea_orm(column_type = "Text", nullable)]
    pub trace_context: Option<String>,
}
