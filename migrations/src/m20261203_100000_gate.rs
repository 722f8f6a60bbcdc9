//! The gate before a rebuild goes live: `query_log`, the tenant's recent questions (text, the
//! scope asked for and who asked, so a replay reads what they could read; bounded per tenant by
//! the store), and `gate_change`, every rebuild, large repair or ontology change the gate
//! judged: held with the answers that differ, live, approved, discarded or rolled back, with
//! what the graph held before it went live (for a rollback).

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
                    .table(QueryLog::Table)
                    .if_not_exists()
                    .col(big_pk_auto(QueryLog::Id))
                    .col(string(QueryLog::Tenant))
                    .col(text(QueryLog::Question))
                    .col(text(QueryLog::Scope))
                    .col(text(QueryLog::Caller))
                    .col(timestamp_with_time_zone(QueryLog::AskedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_query_log_tenant_id")
                    .table(QueryLog::Table)
                    .col(QueryLog::Tenant)
                    .col(QueryLog::Id)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(GateChange::Table)
                    .if_not_exists()
                    .col(big_pk_auto(GateChange::Id))
                    .col(string(GateChange::Tenant))
                    .col(string(GateChange::Kind))
                    .col(string(GateChange::Status))
                    .col(text(GateChange::Event))
                    .col(integer(GateChange::Replayed))
                    .col(text(GateChange::Differences))
                    .col(text_null(GateChange::Previous))
                    .col(timestamp_with_time_zone(GateChange::CreatedAt))
                    .col(timestamp_with_time_zone_null(GateChange::DecidedAt))
                    .col(string(GateChange::DecidedBy))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_gate_change_tenant_id")
                    .table(GateChange::Table)
                    .col(GateChange::Tenant)
                    .col(GateChange::Id)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(GateChange::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(QueryLog::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum QueryLog {
    Table,
    Id,
    Tenant,
    Question,
    Scope,
    Caller,
    AskedAt,
}

#[derive(DeriveIden)]
enum GateChange {
    Table,
    Id,
    Tenant,
    Kind,
    Status,
    Event,
    Replayed,
    Differences,
    Previous,
    CreatedAt,
    DecidedAt,
    DecidedBy,
}
