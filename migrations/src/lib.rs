//! sea-orm migrations of the ontoloop store.
//!
//! Owns the schema's history: one timestamped file per change, listed in order below. A
//! migration that has been published is never edited; change the schema with a new file.

pub use sea_orm_migration::prelude::*;

mod m20261129_000001_create_inbox;
mod m20261129_000002_create_knowledge;
mod m20261129_000003_create_signal_intake;
mod m20261129_000004_create_review;
mod m20261129_000005_create_org;
mod m20261201_040000_model_stage;
mod m20261201_050000_supervisor_rate_per_tenant;
mod m20261201_060000_intake_sequence_per_tenant;
mod m20261201_070000_intake_outbox;
mod m20261201_080000_intake_order;
mod m20261201_090000_retention;
mod m20261201_130000_knowledge_changes;
mod m20261201_160000_outbox_trace;
mod m20261201_210000_page_tombstone;
mod m20261203_070000_fact_scope;
mod m20261203_100000_gate;
mod m20261204_090000_page_effective_from;
mod m20261207_040000_text_vector;

/// Every migration, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261129_000001_create_inbox::Migration),
            Box::new(m20261129_000002_create_knowledge::Migration),
            Box::new(m20261129_000003_create_signal_intake::Migration),
            Box::new(m20261129_000004_create_review::Migration),
            Box::new(m20261129_000005_create_org::Migration),
            Box::new(m20261201_040000_model_stage::Migration),
            Box::new(m20261201_050000_supervisor_rate_per_tenant::Migration),
            Box::new(m20261201_060000_intake_sequence_per_tenant::Migration),
            Box::new(m20261201_070000_intake_outbox::Migration),
            Box::new(m20261201_080000_intake_order::Migration),
            Box::new(m20261201_090000_retention::Migration),
            Box::new(m20261201_130000_knowledge_changes::Migration),
            Box::new(m20261201_160000_outbox_trace::Migration),
            Box::new(m20261201_210000_page_tombstone::Migration),
            Box::new(m20261203_070000_fact_scope::Migration),
            Box::new(m20261203_100000_gate::Migration),
            Box::new(m20261204_090000_page_effective_from::Migration),
            Box::new(m20261207_040000_text_vector::Migration),
        ]
    }
}
