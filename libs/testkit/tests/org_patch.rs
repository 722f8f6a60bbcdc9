//! The org graph's incremental patch over generated worlds: after every one of many random HR
//! events, accepted or refused, the patched graph equals a rebuild from the records.

use ontoloop_org::hr::apply;
use ontoloop_org::org::{OrgGraph, Patched};
use ontoloop_testkit::generate::{WorldSpec, generate, random_hr_event};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Patched and rebuilt graphs agree after every one of many random events, accepted or not.
#[test]
fn patched_graph_equals_rebuild_over_random_events() {
    let world = generate(&WorldSpec {
        tenants: 1,
        people: 300,
        services: 40,
        items: 0,
        ..WorldSpec::default()
    });
    let mut records = world.tenants[0].org.clone();
    let mut org = OrgGraph::build(&records);
    let mut rng = StdRng::seed_from_u64(7);
    let (mut accepted, mut refused, mut incremental) = (0, 0, 0);
    for step in 0..600 {
        let event = random_hr_event(&mut rng, &records, step);
        let before = records.clone();
        match apply(&mut records, &event) {
            Ok(_) => accepted += 1,
            Err(_) => {
                refused += 1;
                assert_eq!(records, before, "a refused event changed records");
            }
        }
        records.validate().expect("records stay valid");
        // Patching after a refused event must be a no-op, so patch either way.
        if let Patched::Incremental { .. } = org.patch(&records, &event) {
            incremental += 1;
        }
        let rebuilt = OrgGraph::build(&records);
        assert_eq!(
            org.canonical(),
            rebuilt.canonical(),
            "step {step}: {event:?}"
        );
        if step % 25 == 0 {
            assert_eq!(org.fingerprint(), rebuilt.fingerprint());
        }
    }
    assert!(accepted > 400, "accepted {accepted}");
    assert!(refused > 10, "refused {refused}");
    assert!(incremental > 400, "incremental {incremental}");
    for person in records.people() {
        assert_eq!(org.manager_of(&person.id), person.manager.as_deref());
        assert_eq!(org.team_of(&person.id), Some(person.team.as_str()));
    }
}
