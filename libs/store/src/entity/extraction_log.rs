//! Rows of `extraction_log`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "extraction_log")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub doc_id: String,
    pub version: i64,
    pub extracted_at: ChronoDateTimeUtc,
    /// The knowledge version whose commit last wrote this row (0: before versions were kept).
    pub changed_in: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
