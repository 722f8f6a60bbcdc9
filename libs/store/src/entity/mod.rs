//! sea-orm entities; private to the store so no other crate depends on table shapes.

/// One table's entity: its `Model` (the columns given, after the `key` columns when there are
/// any), the derives, an empty `Relation` and the default `ActiveModelBehavior`, written once for
/// every table. `Eq` after the table name derives it too (a model with floats cannot); the `key`
/// columns are the primary key, given by the writer (not generated).
macro_rules! table {
    ($table:literal $(, $eq:ident)?; key { $($key:ident: $key_type:ty),* $(,)? } $($column:tt)*) => {
        use sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, $($eq,)? DeriveEntityModel)]
        #[sea_orm(table_name = $table)]
        pub struct Model {
            $(
                #[sea_orm(primary_key, auto_increment = false)]
                pub $key: $key_type,
            )*
            $($column)*
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {}

        impl ActiveModelBehavior for ActiveModel {}
    };
    ($table:literal $(, $eq:ident)?; $($column:tt)*) => {
        $crate::entity::table! { $table $(, $eq)?; key {} $($column)* }
    };
}
use table;

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
pub mod text_vector;
pub mod work_item;
