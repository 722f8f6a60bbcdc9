//! Per-tenant apply order: before an event is applied, the analyst looks for its tenant's events
//! still pending with a lower intake number and applies those first
//! (`Store::intake_pending_before`). This index makes that look-up read only the tenant's
//! pending rows, in number order, instead of every event the tenant ever sent.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEX: &str = "ix_intake_event_tenant_state_seq";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(IntakeEvent::Table)
                    .col(IntakeEvent::Tenant)
                    .col(IntakeEvent::State)
                    .col(IntakeEvent::TenantSeq)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(INDEX)
                    .table(IntakeEvent::Table)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum IntakeEvent {
    Table,
    Tenant,
    State,
    TenantSeq,
}
