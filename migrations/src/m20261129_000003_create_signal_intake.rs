//! The signal intake log: every failure signal the telemetry intake accepted, keyed by tenant and
//! idempotency key (a retried report is a duplicate), indexed for counting occurrences and
//! affected agents per subject over a window.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SignalIntake::Table)
                    .if_not_exists()
                    .col(big_pk_auto(SignalIntake::Id))
                    .col(string(SignalIntake::Tenant))
                    .col(string(SignalIntake::IdempotencyKey))
                    .col(string(SignalIntake::SignalType))
                    .col(string(SignalIntake::Subject))
                    .col(string(SignalIntake::AgentId))
                    .col(text(SignalIntake::Query))
                    .col(timestamp_with_time_zone(SignalIntake::ReceivedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_signal_intake_tenant_key")
                    .table(SignalIntake::Table)
                    .col(SignalIntake::Tenant)
                    .col(SignalIntake::IdempotencyKey)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_signal_intake_subject")
                    .table(SignalIntake::Table)
                    .col(SignalIntake::Tenant)
                    .col(SignalIntake::SignalType)
                    .col(SignalIntake::Subject)
                    .col(SignalIntake::ReceivedAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(SignalIntake::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum SignalIntake {
    Table,
    Id,
    Tenant,
    IdempotencyKey,
    SignalType,
    Subject,
    AgentId,
    Query,
    ReceivedAt,
}
