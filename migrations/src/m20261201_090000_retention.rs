//! Indexes for the periodic and per-request reads that filter by tenant and time, and for the
//! analyst's retention pass (`ontoloop_store::retention`), which deletes expired rows oldest
//! first in bounded batches. Each index names the query it serves:
//!
//! - `ix_signal_intake_tenant_received` (tenant, received_at): `Store::signals_in_window`, the
//!   one tenant's signal window `ListPatterns` clusters; also the tenant-and-window prefix of
//!   `signal_queries` and `signal_first_seen` (the healer).
//! - `ix_signal_intake_received` (received_at): `Store::prune` (`prune_signals`).
//! - `ix_inbox_message_received` (received_at): `Store::prune` (`prune_inbox`) (and `inbox_since`).
//! - `ix_intake_event_received` (received_at): `Store::prune` (`prune_events`). The apply order's
//!   (tenant, state, tenant_seq) index is m20261201_080000's.
//! - `ix_org_change_at` (at): `Store::prune` (`prune_org_changes`). Retrieval's catch-up read
//!   (`org_changes`: tenant, version) is served by the primary key.
//! - `ix_maintenance_run_tenant_id` (tenant, id): `maintenance_runs`, one tenant's runs in order
//!   (`ListMaintenanceRuns`, the dashboard).
//! - `ix_proposed_update_tenant_created` (tenant, created_at): `updates`, one tenant's newest
//!   updates (the dashboard).
//! - `ix_proposed_update_status_created` (status, created_at): `approved_unapplied` (the
//!   analyst's recovery at start-up) and the per-status counts of `update_counts` (the metrics
//!   scrape).
//! - `ix_review_decision_tenant_id` (tenant, id): `decisions`, one tenant's newest decisions.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Every index of this migration: name, table, columns.
fn indexes() -> Vec<(&'static str, DynIden, Vec<DynIden>)> {
    vec![
        (
            "ix_signal_intake_tenant_received",
            SignalIntake::Table.into_iden(),
            vec![
                SignalIntake::Tenant.into_iden(),
                SignalIntake::ReceivedAt.into_iden(),
            ],
        ),
        (
            "ix_signal_intake_received",
            SignalIntake::Table.into_iden(),
            vec![SignalIntake::ReceivedAt.into_iden()],
        ),
        (
            "ix_inbox_message_received",
            InboxMessage::Table.into_iden(),
            vec![InboxMessage::ReceivedAt.into_iden()],
        ),
        (
            "ix_intake_event_received",
            IntakeEvent::Table.into_iden(),
            vec![IntakeEvent::ReceivedAt.into_iden()],
        ),
        (
            "ix_org_change_at",
            OrgChange::Table.into_iden(),
            vec![OrgChange::At.into_iden()],
        ),
        (
            "ix_maintenance_run_tenant_id",
            MaintenanceRun::Table.into_iden(),
            vec![
                MaintenanceRun::Tenant.into_iden(),
                MaintenanceRun::Id.into_iden(),
            ],
        ),
        (
            "ix_proposed_update_tenant_created",
            ProposedUpdate::Table.into_iden(),
            vec![
                ProposedUpdate::Tenant.into_iden(),
                ProposedUpdate::CreatedAt.into_iden(),
            ],
        ),
        (
            "ix_proposed_update_status_created",
            ProposedUpdate::Table.into_iden(),
            vec![
                ProposedUpdate::Status.into_iden(),
                ProposedUpdate::CreatedAt.into_iden(),
            ],
        ),
        (
            "ix_review_decision_tenant_id",
            ReviewDecision::Table.into_iden(),
            vec![
                ReviewDecision::Tenant.into_iden(),
                ReviewDecision::Id.into_iden(),
            ],
        ),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, table, columns) in indexes() {
            let mut index = Index::create();
            index.name(name).table(table);
            for column in columns {
                index.col(column);
            }
            manager.create_index(index.to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, table, _) in indexes().into_iter().rev() {
            manager
                .drop_index(Index::drop().name(name).table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum SignalIntake {
    Table,
    Tenant,
    ReceivedAt,
}

#[derive(DeriveIden)]
enum InboxMessage {
    Table,
    ReceivedAt,
}

#[derive(DeriveIden)]
enum IntakeEvent {
    Table,
    ReceivedAt,
}

#[derive(DeriveIden)]
enum OrgChange {
    Table,
    At,
}

#[derive(DeriveIden)]
enum MaintenanceRun {
    Table,
    Tenant,
    Id,
}

#[derive(DeriveIden)]
enum ProposedUpdate {
    Table,
    Tenant,
    Status,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ReviewDecision {
    Table,
    Tenant,
    Id,
}
