//! sea-orm entities; private to the store so no other crate depends on table shapes.

pub mod entity_row;
pub mod extraction_log;
pub mod fact;
pub mod gate_change;
pub mod inbox_message;
pub mod intake_event;
pub mod knowledge_commit;
pub mod maintenance_run;
pub mod model_cache;
pub mod org_change;
pub mod org_person;
pub mod org_state;
pub mod org_team;
pub mod page_version;
pub mod pattern_state;
pub mod product_fact;
pub mod proposed_update;
pub mod query_log;
pub mod review_decision;
pub mod signal_intake;
pub mod supervisor_rate;
pub mod tenant_state;
pub mod work_item;
