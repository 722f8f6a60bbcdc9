//! sea-orm entities; private to the store so no other crate depends on table shapes.

pub mod entity_row;
pub mod extraction_log;
pub mod fact;
pub mod inbox_message;
pub mod intake_event;
pub mod maintenance_run;
pub mod page_version;
pub mod signal_intake;
pub mod tenant_state;
