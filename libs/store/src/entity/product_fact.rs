//! Rows of `product_fact`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "product_fact")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub file: String,
    pub position: i32,
    pub subject: String,
    pub predicate: String,
    #[sea_orm(column_type = "Text")]
    pub object: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
