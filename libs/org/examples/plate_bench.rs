//! Times world generation, graph and index builds, and plates for many callers on a large
//! generated world, and checks a sample of plates against the oracle.
//!
//! `cargo run --release -p ontoloop-org --example plate_bench [people] [items] [tenants]`

use std::time::{Duration, Instant};

use ontoloop_org::{
    Caller, ItemIndex, OrgGraph, Patched, PlateRequest, ProductGraph, apply, plate,
};
use ontoloop_testkit::generate::{WorldSpec, generate, random_hr_event};
use ontoloop_testkit::plate::{default_plate_settings, oracle_for};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let people = args.next().and_then(Result::ok).unwrap_or(10_000);
    let items = args.next().and_then(Result::ok).unwrap_or(100_000);
    let tenants = args.next().and_then(Result::ok).unwrap_or(1);
    let spec = WorldSpec {
        seed: 1,
        tenants,
        people,
        services: people / 10,
        items,
        ..WorldSpec::default()
    };

    let started = Instant::now();
    let world = generate(&spec);
    println!(
        "generate {people} people / {items} items / {tenants} tenants: {:?}",
        started.elapsed()
    );

    let started = Instant::now();
    let orgs: Vec<OrgGraph> = world
        .tenants
        .iter()
        .map(|t| OrgGraph::build(&t.org))
        .collect();
    println!("org graphs: {:?}", started.elapsed());
    let started = Instant::now();
    let products: Vec<ProductGraph> = world
        .tenants
        .iter()
        .map(|t| ProductGraph::build(&t.facts).0)
        .collect();
    println!("product graphs: {:?}", started.elapsed());
    let started = Instant::now();
    let index = match ItemIndex::build(world.items.clone()) {
        Ok(index) => index,
        Err(error) => {
            eprintln!("index: {error}");
            std::process::exit(1);
        }
    };
    println!("item index: {:?}", started.elapsed());

    let settings = default_plate_settings();
    let mut times: Vec<Duration> = Vec::new();
    let mut shown = 0;
    let mut checked = 0;
    for (t, tenant) in world.tenants.iter().enumerate() {
        for (n, person) in tenant.org.people().step_by(7).enumerate() {
            let Ok(caller) = Caller::new(&tenant.tenant, &person.id) else {
                continue;
            };
            let request = PlateRequest {
                caller: caller.clone(),
                now: world.now,
                limit: None,
            };
            let started = Instant::now();
            let got = plate(&request, &orgs[t], &products[t], &index, &settings);
            times.push(started.elapsed());
            shown += got.items.len();
            if n % 100 == 0 {
                let want = oracle_for(&world, tenant, &caller, None, &settings);
                assert_eq!(got, want, "plate differs from oracle for {caller:?}");
                checked += 1;
            }
        }
    }
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "plates: {} callers, {shown} items shown, p50 {:?}, p99 {:?}, max {:?}; {checked} checked against the oracle",
        times.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );

    let mut records = world.tenants[0].org.clone();
    let mut org = orgs[0].clone();
    let mut rng = StdRng::seed_from_u64(2);
    let (mut patch_time, mut build_time, mut incremental) = (Duration::ZERO, Duration::ZERO, 0);
    let events = 300;
    for step in 0..events {
        let event = random_hr_event(&mut rng, &records, step);
        if apply(&mut records, &event).is_err() {
            continue;
        }
        let started = Instant::now();
        if let Patched::Incremental { .. } = org.patch(&records, &event) {
            incremental += 1;
            patch_time += started.elapsed();
        }
        let started = Instant::now();
        let rebuilt = OrgGraph::build(&records);
        build_time += started.elapsed();
        assert_eq!(
            org.fingerprint(),
            rebuilt.fingerprint(),
            "patch differs from rebuild"
        );
    }
    let started = Instant::now();
    let copy = org.clone();
    let clone_time = started.elapsed();
    drop(copy);
    println!("cloning the org graph (to patch a published copy): {clone_time:?}");
    println!(
        "hr events: {incremental} one-person patches took {patch_time:?}; rebuilding after every event took {build_time:?}"
    );
}
