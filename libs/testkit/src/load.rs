//! A generated world written into a store: every tenant's HR records, generated product facts
//! and work items, replacing what the tenant had. `ontoloop gen-org`, the plate benchmark and the
//! tests load their worlds this way.

use ontoloop_store::{Store, StoreError};

use crate::generate::World;

/// A tenant the store refused to load.
#[derive(Debug, thiserror::Error)]
#[error("load tenant {tenant}")]
pub struct LoadError {
    /// The tenant.
    pub tenant: String,
    /// Why the store refused.
    #[source]
    pub source: StoreError,
}

/// Loads every tenant of `world` into `store` (running services pick the new version up); per
/// tenant, in order: id, people, items, product facts and the org version after the load.
pub async fn load(
    store: &Store,
    world: &World,
) -> Result<Vec<(String, usize, usize, usize, i64)>, LoadError> {
    let mut loaded = Vec::new();
    for tenant in &world.tenants {
        let items = world.items_of(&tenant.tenant);
        let version = store
            .replace_org(
                &tenant.tenant,
                &tenant.org,
                "generated",
                &tenant.facts,
                &items,
            )
            .await
            .map_err(|source| LoadError {
                tenant: tenant.tenant.clone(),
                source,
            })?;
        loaded.push((
            tenant.tenant.clone(),
            tenant.org.people().len(),
            items.len(),
            tenant.facts.len(),
            version,
        ));
    }
    Ok(loaded)
}
