//! Intake sequence numbers are counted per tenant: `intake_event.tenant_seq` is the number a
//! tenant's `PushEvent` returns (1, 2, 3, … for each tenant), unique per tenant; `seq` stays the
//! row's key and is never shown. A global counter told every tenant how many events the others
//! pushed between two of its own.
//!
//! Existing rows keep the number they were given (`tenant_seq = seq`): those numbers are unique
//! within their tenant already, so a client holding one still reads the same event, and each
//! tenant counts on from its highest.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEX: &str = "ux_intake_event_tenant_seq";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(IntakeEvent::Table)
                    .add_column(big_integer(IntakeEvent::TenantSeq).default(0))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(IntakeEvent::Table)
                    .value(IntakeEvent::TenantSeq, Expr::col(IntakeEvent::Seq))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(IntakeEvent::Table)
                    .col(IntakeEvent::Tenant)
                    .col(IntakeEvent::TenantSeq)
                    .unique()
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
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(IntakeEvent::Table)
                    .drop_column(IntakeEvent::TenantSeq)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum IntakeEvent {
    Table,
    Seq,
    Tenant,
    TenantSeq,
}
