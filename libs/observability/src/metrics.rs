//! Process-wide metrics in the Prometheus text format.
//!
//! Counters and gauges keyed by name and labels, and summaries (count and sum) for latencies.
//! Services record into [`global`]; each service's `/metrics` endpoint renders the families that
//! start with its prefix, plus whatever gauges it computes at scrape time.
//!
//! Label sets are bounded: a label value is one of a fixed set written in code (a signal type, a
//! severity, a route), or it goes through a [`BoundedLabel`] — tenants through [`tenant_label`] —
//! so no request can grow the number of series without limit.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{LazyLock, Mutex};

type Labels = Vec<(String, String)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Summary,
}

#[derive(Debug, Default)]
struct Family {
    help: String,
    kind: Option<Kind>,
    values: BTreeMap<Labels, (f64, f64)>,
}

/// A set of metric families.
#[derive(Debug, Default)]
pub struct Registry {
    families: Mutex<BTreeMap<String, Family>>,
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

impl Registry {
    fn with(&self, name: &str, help: &str, kind: Kind, f: impl FnOnce(&mut Family)) {
        // A poisoned lock only means another thread panicked mid-update: keep counting.
        let mut families = self
            .families
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !families.contains_key(name) {
            families.insert(name.to_owned(), Family::default());
        }
        let Some(family) = families.get_mut(name) else {
            return;
        };
        if family.kind.is_none() {
            family.kind = Some(kind);
            family.help = help.to_owned();
        }
        f(family);
    }

    /// Adds `by` to a counter.
    pub fn add(&self, name: &str, help: &str, pairs: &[(&str, &str)], by: f64) {
        self.with(name, help, Kind::Counter, |family| {
            // Hot counters hit an existing label set: find it without allocating.
            if let Some(value) = family
                .values
                .iter_mut()
                .find(|(labels, _)| same_labels(labels, pairs))
                .map(|(_, value)| value)
            {
                value.0 += by;
            } else {
                family.values.insert(labels(pairs), (by, 0.0));
            }
        });
    }

    /// Sets a gauge.
    pub fn set(&self, name: &str, help: &str, pairs: &[(&str, &str)], value: f64) {
        self.with(name, help, Kind::Gauge, |family| {
            family.values.insert(labels(pairs), (value, 0.0));
        });
    }

    /// Observes one value of a summary (kept as `_count` and `_sum`).
    pub fn observe(&self, name: &str, help: &str, pairs: &[(&str, &str)], value: f64) {
        self.with(name, help, Kind::Summary, |family| {
            let entry = family.values.entry(labels(pairs)).or_default();
            entry.0 += 1.0;
            entry.1 += value;
        });
    }

    /// The current value of a counter or gauge (the count of a summary); 0 when never set.
    pub fn value(&self, name: &str, pairs: &[(&str, &str)]) -> f64 {
        let families = self
            .families
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        families
            .get(name)
            .and_then(|f| f.values.get(&labels(pairs)))
            .map_or(0.0, |v| v.0)
    }

    /// The families whose names start with `prefix`, in the Prometheus text format.
    pub fn render(&self, prefix: &str) -> String {
        let families = self
            .families
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = String::new();
        for (name, family) in families.range(prefix.to_owned()..) {
            if !name.starts_with(prefix) {
                break;
            }
            let kind = match family.kind {
                Some(Kind::Counter) => "counter",
                Some(Kind::Gauge) => "gauge",
                Some(Kind::Summary) => "summary",
                None => continue,
            };
            let _ = writeln!(out, "# HELP {name} {}", family.help);
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, (first, second)) in &family.values {
                let text = render_labels(labels);
                if family.kind == Some(Kind::Summary) {
                    let _ = writeln!(out, "{name}_count{text} {first}");
                    let _ = writeln!(out, "{name}_sum{text} {second}");
                } else {
                    let _ = writeln!(out, "{name}{text} {first}");
                }
            }
        }
        out
    }
}

fn same_labels(labels: &Labels, pairs: &[(&str, &str)]) -> bool {
    labels.len() == pairs.len()
        && labels
            .iter()
            .zip(pairs)
            .all(|((k, v), (pk, pv))| k == pk && v == pv)
}

fn render_labels(labels: &Labels) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{k}=\"{v}\"")
        })
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The label value of every value a [`BoundedLabel`] has no room left for.
pub const OTHER: &str = "other";

/// How many tenants get a `tenant` label value of their own in one process ([`tenant_label`]).
pub const TENANT_LABELS: usize = 20;

/// The values of one label whose values come from requests or data (a tenant, a type a tenant's
/// ontology names), bounded: the first `limit` distinct values seen keep their own value for the
/// life of the process, so a series never changes its label; every later value is [`OTHER`].
#[derive(Debug)]
pub struct BoundedLabel {
    limit: usize,
    seen: Mutex<BTreeSet<String>>,
}

impl BoundedLabel {
    /// A label with room for `limit` values of their own.
    pub const fn new(limit: usize) -> Self {
        Self {
            limit,
            seen: Mutex::new(BTreeSet::new()),
        }
    }

    /// The label value to record `value` under: itself, or [`OTHER`] once the room is taken.
    pub fn value<'a>(&self, value: &'a str) -> &'a str {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.contains(value) {
            return value;
        }
        if seen.len() < self.limit {
            seen.insert(value.to_owned());
            return value;
        }
        OTHER
    }
}

/// The `tenant` label value of a tenant: its name for the first [`TENANT_LABELS`] tenants this
/// process records, [`OTHER`] for the rest (a tenant named `other` shares their series).
pub fn tenant_label(tenant: &str) -> &str {
    static TENANTS: BoundedLabel = BoundedLabel::new(TENANT_LABELS);
    TENANTS.value(tenant)
}

/// The process-wide registry.
pub fn global() -> &'static Registry {
    static GLOBAL: LazyLock<Registry> = LazyLock::new(Registry::default);
    &GLOBAL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_summaries_in_the_text_format() {
        let registry = Registry::default();
        registry.add("ontoloop_x_total", "Things.", &[("type", "a\"b")], 2.0);
        registry.add("ontoloop_x_total", "Things.", &[("type", "a\"b")], 1.0);
        registry.set("ontoloop_y", "Depth.", &[], 4.0);
        registry.observe("ontoloop_z_ms", "Latency.", &[], 10.0);
        registry.observe("ontoloop_z_ms", "Latency.", &[], 30.0);
        registry.add("other_total", "Not ours.", &[], 1.0);
        let text = registry.render("ontoloop_");
        assert!(
            text.contains("# TYPE ontoloop_x_total counter\nontoloop_x_total{type=\"a\\\"b\"} 3\n")
        );
        assert!(text.contains("# TYPE ontoloop_y gauge\nontoloop_y 4\n"));
        assert!(text.contains("ontoloop_z_ms_count 2\nontoloop_z_ms_sum 40\n"));
        assert!(!text.contains("other_total"));
        assert_eq!(registry.value("ontoloop_x_total", &[("type", "a\"b")]), 3.0);
    }

    #[test]
    fn a_bounded_label_keeps_the_first_values_and_counts_the_rest_as_other() {
        let label = BoundedLabel::new(2);
        assert_eq!(label.value("acme"), "acme");
        assert_eq!(label.value("globex"), "globex");
        assert_eq!(label.value("initech"), OTHER, "no room left");
        assert_eq!(label.value("acme"), "acme", "a value seen keeps its series");
        let registry = Registry::default();
        for n in 0..1_000 {
            let tenant = format!("tenant-{n}");
            registry.add(
                "ontoloop_t_total",
                "T.",
                &[("tenant", label.value(&tenant))],
                1.0,
            );
        }
        let text = registry.render("ontoloop_t");
        assert_eq!(text.lines().count(), 3, "help, type and one series: {text}");
        assert!(
            text.contains("ontoloop_t_total{tenant=\"other\"} 1000"),
            "{text}"
        );
    }

    #[test]
    fn tenant_labels_are_bounded_for_the_process() {
        let labels: BTreeSet<String> = (0..TENANT_LABELS * 5)
            .map(|n| tenant_label(&format!("bounded-{n}")).to_owned())
            .collect();
        assert!(labels.len() <= TENANT_LABELS + 1, "{}", labels.len());
        assert!(labels.contains(OTHER));
    }
}
