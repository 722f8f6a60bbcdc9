//! `trace_context` on the intake logs (`intake_event`, `signal_intake`): the W3C trace context
//! (`traceparent`, `tracestate`, as a JSON object) of the request that was acknowledged, so a row
//! the relay publishes later — the broker was down at the push — still continues the caller's
//! trace. Empty when the request carried none or traces are off; rows from before are empty.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column per ALTER TABLE.
        for table in [
            IntakeEvent::Table.into_iden(),
            SignalIntake::Table.into_iden(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(table)
                        .add_column(text_null(Trace::TraceContext))
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            IntakeEvent::Table.into_iden(),
            SignalIntake::Table.into_iden(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(table)
                        .drop_column(Trace::TraceContext)
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
}

#[derive(DeriveIden)]
enum SignalIntake {
    Table,
}

#[derive(DeriveIden)]
enum Trace {
    TraceContext,
}
