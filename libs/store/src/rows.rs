//! Reading a list: a query's rows, each converted to the domain value a caller gets back.

use sea_orm::{ConnectionTrait, EntityTrait, Select};

use crate::StoreError;

/// `query.rows(db, convert)`: every row of a select, converted (the store's lists all read so).
pub(crate) trait Rows<E: EntityTrait> {
    /// Runs the query on `db` and converts each row with `convert`, in the query's order.
    async fn rows<T>(
        self,
        db: &impl ConnectionTrait,
        convert: impl FnMut(E::Model) -> T,
    ) -> Result<Vec<T>, StoreError>;
}

impl<E: EntityTrait> Rows<E> for Select<E> {
    async fn rows<T>(
        self,
        db: &impl ConnectionTrait,
        convert: impl FnMut(E::Model) -> T,
    ) -> Result<Vec<T>, StoreError> {
        Ok(self.all(db).await?.into_iter().map(convert).collect())
    }
}
