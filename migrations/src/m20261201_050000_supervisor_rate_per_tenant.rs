//! The supervisor's learned sampling rates become per tenant: `supervisor_rate` is keyed by
//! tenant × signal type × source × domain.
//!
//! Rates learned before this migration were learned from every tenant's reviewers at once, so
//! they belong to no one tenant; handing them to any tenant would give it the lessons of others.
//! They are dropped: each tenant's supervisor starts again from `supervisor.base_rate` and
//! relearns from its own reviewers. (Rebuilding the table also sidesteps changing a primary key
//! in place, which SQLite cannot do.)

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(SupervisorRate::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(SupervisorRate::Table)
                    .col(string(SupervisorRate::Tenant))
                    .col(string(SupervisorRate::SignalType))
                    .col(string(SupervisorRate::Source))
                    .col(string(SupervisorRate::Domain))
                    .col(double(SupervisorRate::Rate))
                    .col(big_integer(SupervisorRate::Approvals))
                    .col(big_integer(SupervisorRate::Rejections))
                    .col(timestamp_with_time_zone(SupervisorRate::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .col(SupervisorRate::Tenant)
                            .col(SupervisorRate::SignalType)
                            .col(SupervisorRate::Source)
                            .col(SupervisorRate::Domain),
                    )
                    .to_owned(),
            )
            .await
    }

    /// Back to one rate per category for all tenants; per-tenant rates cannot be merged into it
    /// honestly, so it starts empty.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(SupervisorRate::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(SupervisorRate::Table)
                    .col(string(SupervisorRate::SignalType))
                    .col(string(SupervisorRate::Source))
                    .col(string(SupervisorRate::Domain))
                    .col(double(SupervisorRate::Rate))
                    .col(big_integer(SupervisorRate::Approvals))
                    .col(big_integer(SupervisorRate::Rejections))
                    .col(timestamp_with_time_zone(SupervisorRate::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .col(SupervisorRate::SignalType)
                            .col(SupervisorRate::Source)
                            .col(SupervisorRate::Domain),
                    )
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum SupervisorRate {
    Table,
    Tenant,
    SignalType,
    Source,
    Domain,
    Rate,
    Approvals,
    Rejections,
    UpdatedAt,
}
