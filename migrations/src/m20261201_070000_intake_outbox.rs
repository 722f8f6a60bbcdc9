//! The intake logs are the outbox: an accepted event or signal is recorded as not yet published
//! (`published_at` empty) in the same write that acknowledges it, and the relay publishes such
//! rows and stamps them. `claimed_until` is the lease a publisher (a request's fast path or one
//! relay of several replicas) holds on a row while it publishes it. A signal row keeps the
//! message `body` to publish, and `delivered_at` says the analyst recorded it (the in-process
//! queue loses what it held at a crash, so rows published to it but not delivered are published
//! again at start-up).
//!
//! Existing rows were published by the old intake and keep that: `published_at` (and a signal's
//! `delivered_at`) is their `received_at`. An event marked failed because its publish failed was
//! acknowledged as an error but holds its idempotency key; it becomes pending and unpublished
//! again, so it is published once and a client retry finds it on its way.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const EVENTS_INDEX: &str = "ix_intake_event_unpublished";
const SIGNALS_INDEX: &str = "ix_signal_intake_unpublished";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column per ALTER TABLE.
        for column in [IntakeEvent::PublishedAt, IntakeEvent::ClaimedUntil] {
            manager
                .alter_table(
                    Table::alter()
                        .table(IntakeEvent::Table)
                        .add_column(timestamp_with_time_zone_null(column))
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(SignalIntake::Table)
                    .add_column(text_null(SignalIntake::Body))
                    .to_owned(),
            )
            .await?;
        for column in [
            SignalIntake::PublishedAt,
            SignalIntake::ClaimedUntil,
            SignalIntake::DeliveredAt,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(SignalIntake::Table)
                        .add_column(timestamp_with_time_zone_null(column))
                        .to_owned(),
                )
                .await?;
        }
        manager
            .exec_stmt(
                Query::update()
                    .table(IntakeEvent::Table)
                    .value(IntakeEvent::PublishedAt, Expr::col(IntakeEvent::ReceivedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(IntakeEvent::Table)
                    .value(IntakeEvent::PublishedAt, Expr::cust("NULL"))
                    .value(IntakeEvent::State, "pending")
                    .value(IntakeEvent::Detail, Expr::cust("NULL"))
                    .and_where(Expr::col(IntakeEvent::State).eq("failed"))
                    .and_where(Expr::col(IntakeEvent::Detail).like("publish failed%"))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(SignalIntake::Table)
                    .value(
                        SignalIntake::PublishedAt,
                        Expr::col(SignalIntake::ReceivedAt),
                    )
                    .value(
                        SignalIntake::DeliveredAt,
                        Expr::col(SignalIntake::ReceivedAt),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(EVENTS_INDEX)
                    .table(IntakeEvent::Table)
                    .col(IntakeEvent::PublishedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(SIGNALS_INDEX)
                    .table(SignalIntake::Table)
                    .col(SignalIntake::PublishedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(SIGNALS_INDEX)
                    .table(SignalIntake::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name(EVENTS_INDEX)
                    .table(IntakeEvent::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            SignalIntake::DeliveredAt,
            SignalIntake::ClaimedUntil,
            SignalIntake::PublishedAt,
            SignalIntake::Body,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(SignalIntake::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        for column in [IntakeEvent::ClaimedUntil, IntakeEvent::PublishedAt] {
            manager
                .alter_table(
                    Table::alter()
                        .table(IntakeEvent::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum IntakeEvent {
    Table,
    ReceivedAt,
    State,
    Detail,
    PublishedAt,
    ClaimedUntil,
}

#[derive(DeriveIden)]
enum SignalIntake {
    Table,
    ReceivedAt,
    Body,
    PublishedAt,
    ClaimedUntil,
    DeliveredAt,
}
