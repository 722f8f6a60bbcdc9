//! `ontoloop gen-org` and `ontoloop plate`: load a generated organisation into the store, and
//! print a caller's plate.

use std::time::Instant;

use anyhow::Context as _;
use ontoloop_testkit::generate::{World, WorldSpec, generate};
use ontoloop_proto::v1;
use ontoloop_settings::Settings;
use ontoloop_store::Store;
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

/// Loads every tenant of `world` into `store`, replacing what the tenant had (HR records,
/// generated product facts, work items); running services pick the new version up.
pub async fn load(
    store: &Store,
    world: &World,
) -> anyhow::Result<Vec<(String, usize, usize, usize, i64)>> {
    let mut loaded = Vec::new();
    for tenant in &world.tenants {
        let items: Vec<_> = world
            .items
            .iter()
            .filter(|item| item.tenant == tenant.tenant)
            .cloned()
            .collect();
        let version = store
            .replace_org(
                &tenant.tenant,
                &tenant.org,
                "generated",
                &tenant.facts,
                &items,
            )
            .await
            .with_context(|| format!("load tenant {}", tenant.tenant))?;
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

/// Prints what `gen-org` loaded.
pub fn print_gen(report: &GenReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    for (tenant, people, items, facts, version) in &report.tenants {
        println!(
            "{tenant}: {people} people, {items} work items, {facts} product facts (org version {version})"
        );
    }
    println!(
        "generated in {:.2} s, loaded in {:.2} s; items are dated relative to {} (use --as-of {} with `ontoloop plate`)",
        report.generate_secs,
        report.load_secs,
        report.now.to_rfc3339(),
        report.now.to_rfc3339()
    );
    Ok(())
}

/// Prints a plate: the dimension counts, then one line per item with why it is there.
pub fn print_plate(plate: &v1::PlateResponse, json: bool) -> anyhow::Result<()> {
    if json {
        let items: Vec<serde_json::Value> = plate
            .items
            .iter()
            .map(|item| {
                serde_json::json!({
                    "item_id": item.item_id,
                    "title": item.title,
                    "assignee": item.assignee,
                    "service": item.service,
                    "severity": item.severity,
                    "scope": item.scope,
                    "source_type": item.source_type,
                    "created_at": item.created_at.map(|t| t.seconds),
                    "score": item.score,
                    "admitted_by": item.admitted_by,
                    "weights": item.weights,
                })
            })
            .collect();
        let dimensions: Vec<serde_json::Value> = plate
            .dimensions
            .iter()
            .map(|d| serde_json::json!({"name": d.name, "candidates_after": d.candidates_after}))
            .collect();
        let out = serde_json::json!({
            "org_version": plate.org_version,
            "dimensions": dimensions,
            "items": items,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let counts: Vec<String> = plate
        .dimensions
        .iter()
        .map(|d| format!("{} {}", d.name, d.candidates_after))
        .collect();
    println!("candidates after each dimension: {}", counts.join(" → "));
    if plate.items.is_empty() {
        println!("nothing on this plate");
    }
    for (rank, item) in plate.items.iter().enumerate() {
        let weight = |name: &str| item.weights.get(name).copied().unwrap_or_default();
        println!(
            "{:>3}. {:<12} {:<8} {:<10} {:<15} score {:.3} (temporal {:.3} × authority {:.2} × severity {:.2}) via {}",
            rank + 1,
            item.item_id,
            item.severity,
            item.scope,
            item.source_type,
            item.score,
            weight("temporal"),
            weight("authority"),
            weight("severity"),
            item.admitted_by.join("+"),
        );
        println!(
            "     {} · assignee {} · service {}",
            item.title,
            if item.assignee.is_empty() {
                "-"
            } else {
                &item.assignee
            },
            if item.service.is_empty() {
                "-"
            } else {
                &item.service
            },
        );
    }
    println!("(org version {})", plate.org_version);
    Ok(())
}
