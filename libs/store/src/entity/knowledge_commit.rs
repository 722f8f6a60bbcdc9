//! One row per committed knowledge version of a tenant: what its rows cannot say (whether it
//! replaced the ontology, which entities it removed), so a reader can catch up version by version.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "knowledge_commit")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub version: i64,
    pub ontology_changed: bool,
    /// Entity ids merged away, a JSON list.
    #[sea_orm(column_type = "Text")]
    pub removed_entities: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
