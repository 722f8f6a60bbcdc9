//! `gen-org` (`ontoloop gen-org`, `ontoloop-bench gen-org`): generate a seeded organisation and load it into the
//! store with the test kit's loader (the plate benchmark and the system tests load theirs the
//! same way).

use std::time::Instant;

use anyhow::Context as _;
use ontoloop_settings::Settings;
use ontoloop_store::Store;
use ontoloop_testkit::generate::{World, WorldSpec, generate};
use ontoloop_testkit::load::load;
use serde::Serialize;

/// What `gen-org` generates.
#[derive(Debug, Clone)]
pub struct GenSpec {
    /// People over all tenants.
    pub people: usize,
    /// Work items over all tenants.
    pub items: usize,
    /// Services over all tenants.
    pub services: usize,
    /// Tenants (`tenant-0`, `tenant-1`, ...).
    pub tenants: usize,
    /// Seed of the generator.
    pub seed: u64,
}

/// What `gen-org` loaded.
#[derive(Debug, Clone, Serialize)]
pub struct GenReport {
    /// Per tenant: id, people, items, product facts and the org version after the load.
    pub tenants: Vec<(String, usize, usize, usize, i64)>,
    /// The instant the items' ages are relative to (pass it as `--as-of` to rank as generated).
    pub now: chrono::DateTime<chrono::Utc>,
    /// Seconds spent generating.
    pub generate_secs: f64,
    /// Seconds spent loading.
    pub load_secs: f64,
}

/// The world a [`GenSpec`] describes.
pub fn world(spec: &GenSpec) -> World {
    generate(&WorldSpec {
        seed: spec.seed,
        tenants: spec.tenants,
        people: spec.people,
        services: spec.services,
        items: spec.items,
        ..WorldSpec::default()
    })
}

/// Generates a world and loads it into the store the settings name.
pub async fn gen_org(settings: &Settings, spec: &GenSpec) -> anyhow::Result<GenReport> {
    let started = Instant::now();
    let world = world(spec);
    let generate_secs = started.elapsed().as_secs_f64();
    let store = Store::open(&settings.store)
        .await
        .context("open the store")?;
    let started = Instant::now();
    let tenants = load(&store, &world).await?;
    let load_secs = started.elapsed().as_secs_f64();
    store.close().await.context("close the store")?;
    Ok(GenReport {
        tenants,
        now: world.now,
        generate_secs,
        load_secs,
    })
}
