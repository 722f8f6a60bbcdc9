//! Process-wide metrics, kept and encoded by the `prometheus-client` crate in the Prometheus
//! text format (version 0.0.4).
//!
//! Counters and gauges keyed by name and labels, and histograms (in seconds, [`LATENCY_BUCKETS`])
//! for latencies. Services record into [`global`]; each service's `/metrics` endpoint renders
//! its own families (named `ontoloop_<service>_…`) and the process-wide ones that name no
//! service, plus whatever gauges it computes at scrape time.
//!
//! Label sets are bounded: a label value is one of a fixed set written in code (a signal type, a
//! severity, a route, a gRPC method the service serves), or it goes through a [`BoundedLabel`] —
//! tenants through [`tenant_label`] — so no request can grow the number of series without limit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};

/// The upper bounds (seconds) of every histogram's buckets: from a millisecond, for an RPC served
/// from memory, to a minute, for an event that waited in a queue behind a backlog.
pub const LATENCY_BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The `Content-Type` of [`Registry::render`]'s text: the Prometheus text format, version 0.0.4
/// (UTF-8, the format's only encoding), as `/metrics` has always answered.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// A set of metric families.
#[derive(Debug, Default)]
pub struct Registry {
    families: RwLock<BTreeMap<String, Entry>>,
}

impl Registry {
    /// Adds `by` to a counter. Counter names end in `_total`, as the text format shows them.
    pub fn add(&self, name: &str, help: &str, pairs: &[(&str, &str)], by: f64) {
        self.with(name, help, Kind::Counter, |metric| {
            if let Metric::Counter(family) = metric {
                family.get_or_create(&labels(pairs)).add(by);
            }
        });
    }

    /// Sets a gauge.
    pub fn set(&self, name: &str, help: &str, pairs: &[(&str, &str)], value: f64) {
        self.with(name, help, Kind::Gauge, |metric| {
            if let Metric::Gauge(family) = metric {
                family.get_or_create(&labels(pairs)).set(value);
            }
        });
    }

    /// Observes one value (seconds, by convention of names ending in `_seconds`) of a histogram
    /// with the [`LATENCY_BUCKETS`].
    pub fn observe(&self, name: &str, help: &str, pairs: &[(&str, &str)], value: f64) {
        self.with(name, help, Kind::Histogram, |metric| {
            if let Metric::Histogram(family) = metric {
                family.get_or_create(&labels(pairs)).observe(value);
            }
        });
    }

    /// The current value of a counter or gauge (the count of a histogram); 0 when never set.
    pub fn value(&self, name: &str, pairs: &[(&str, &str)]) -> f64 {
        let families = self
            .families
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(entry) = families.get(name) else {
            return 0.0;
        };
        let labels = labels(pairs);
        match &entry.metric {
            Metric::Counter(family) => family.get(&labels).map_or(0.0, |v| v.get()),
            Metric::Gauge(family) => family.get(&labels).map_or(0.0, |v| v.get()),
            Metric::Histogram(family) => family.get(&labels).map_or(0.0, |h| h.count() as f64),
        }
    }

    /// The families whose names start with `prefix`, in the Prometheus text format.
    pub fn render(&self, prefix: &str) -> String {
        self.render_matching(|name| name.starts_with(prefix))
    }

    /// The families whose names `keep` accepts, in the Prometheus text format.
    pub fn render_matching(&self, keep: impl Fn(&str) -> bool) -> String {
        let mut encoded = prometheus_client::registry::Registry::default();
        {
            let families = self
                .families
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (name, entry) in families.iter().filter(|(name, _)| keep(name)) {
                // The crate appends the `_total` of counters and the period ending the help.
                let help = entry
                    .help
                    .strip_suffix('.')
                    .unwrap_or(&entry.help)
                    .to_owned();
                match &entry.metric {
                    Metric::Counter(family) => {
                        let name = name.strip_suffix("_total").unwrap_or(name);
                        encoded.register(name, help, family.clone());
                    }
                    Metric::Gauge(family) => encoded.register(name, help, family.clone()),
                    Metric::Histogram(family) => encoded.register(name, help, family.clone()),
                }
            }
        }
        let mut out = String::new();
        // Writing to a String cannot fail; an encoding error would leave the text cut short,
        // which a scraper reports, rather than take the process down.
        if let Err(err) = prometheus_client::encoding::prometheus_text::encode(&mut out, &encoded) {
            tracing::warn!(error = %err, "cannot encode metrics");
        }
        out
    }

    /// Runs `f` on the family `name`, made as `kind` with `help` on first use. A later use with
    /// another kind is ignored: a family keeps the kind it was made with.
    fn with(&self, name: &str, help: &str, kind: Kind, f: impl FnOnce(&Metric)) {
        {
            let families = self
                .families
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(entry) = families.get(name) {
                return f(&entry.metric);
            }
        }
        // A poisoned lock only means another thread panicked mid-update: keep counting.
        let mut families = self
            .families
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = families.entry(name.to_owned()).or_insert_with(|| Entry {
            help: help.to_owned(),
            metric: Metric::new(kind),
        });
        f(&entry.metric);
    }
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

type Labels = Vec<(String, String)>;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Debug)]
struct Entry {
    help: String,
    metric: Metric,
}

/// One family's series. Clones share them, so a render registers clones.
#[derive(Debug)]
enum Metric {
    Counter(Family<Labels, Value<Counted>>),
    Gauge(Family<Labels, Value<Gauged>>),
    Histogram(Family<Labels, Observed, fn() -> Observed>),
}

impl Metric {
    fn new(kind: Kind) -> Self {
        match kind {
            Kind::Counter => Self::Counter(Family::default()),
            Kind::Gauge => Self::Gauge(Family::default()),
            Kind::Histogram => Self::Histogram(Family::new_with_constructor(latency_histogram)),
        }
    }
}

fn latency_histogram() -> Observed {
    Observed {
        histogram: Histogram::new(LATENCY_BUCKETS),
        count: Arc::default(),
    }
}

/// A histogram that also says how many values it observed (the crate's own count is for its
/// tests only), for [`Registry::value`].
#[derive(Debug, Clone)]
struct Observed {
    histogram: Histogram,
    count: Arc<AtomicU64>,
}

impl Observed {
    fn observe(&self, value: f64) {
        self.histogram.observe(value);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

impl TypedMetric for Observed {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Observed {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.histogram.encode(encoder)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// A counter's or gauge's `f64`, written as an integer when it is whole (`3`, not `3.0`, as
/// Prometheus' own clients write counts).
#[derive(Debug, Default)]
struct Value<K> {
    bits: Arc<AtomicU64>,
    kind: std::marker::PhantomData<K>,
}

impl<K> Clone for Value<K> {
    fn clone(&self) -> Self {
        Self {
            bits: self.bits.clone(),
            kind: std::marker::PhantomData,
        }
    }
}

#[derive(Debug, Default)]
struct Counted;

#[derive(Debug, Default)]
struct Gauged;

impl<K> Value<K> {
    fn get(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }

    fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Relaxed);
    }

    fn add(&self, by: f64) {
        let _ = self
            .bits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + by).to_bits())
            });
    }

    /// The value as an integer when it is whole and small enough to be exact.
    fn whole(&self) -> Option<i64> {
        let value = self.get();
        (value.fract() == 0.0 && value.abs() < 9.0e15).then_some(value as i64)
    }
}

impl TypedMetric for Value<Counted> {
    const TYPE: MetricType = MetricType::Counter;
}

impl TypedMetric for Value<Gauged> {
    const TYPE: MetricType = MetricType::Gauge;
}

impl EncodeMetric for Value<Counted> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        match self.whole().and_then(|v| u64::try_from(v).ok()) {
            Some(whole) => encoder.encode_counter::<NoLabelSet, _, u64>(&whole, None),
            None => encoder.encode_counter::<NoLabelSet, _, u64>(&self.get(), None),
        }
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

impl EncodeMetric for Value<Gauged> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        match self.whole() {
            Some(whole) => encoder.encode_gauge(&whole),
            None => encoder.encode_gauge(&self.get()),
        }
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_histograms_in_the_text_format() {
        let registry = Registry::default();
        registry.add("ontoloop_x_total", "Things.", &[("type", "a\"b")], 2.0);
        registry.add("ontoloop_x_total", "Things.", &[("type", "a\"b")], 1.0);
        registry.set("ontoloop_y", "Depth.", &[], 4.0);
        registry.set("ontoloop_share", "Share.", &[], 0.25);
        registry.observe("ontoloop_z_seconds", "Latency.", &[("m", "/a")], 0.004);
        registry.observe("ontoloop_z_seconds", "Latency.", &[("m", "/a")], 2.0);
        registry.add("other_total", "Not ours.", &[], 1.0);
        let text = registry.render("ontoloop_");
        assert!(
            text.contains(
                "# HELP ontoloop_x_total Things.\n# TYPE ontoloop_x_total counter\n\
                 ontoloop_x_total{type=\"a\\\"b\"} 3\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE ontoloop_y gauge\nontoloop_y 4\n"),
            "{text}"
        );
        assert!(text.contains("ontoloop_share 0.25\n"), "{text}");
        assert!(
            text.contains("# TYPE ontoloop_z_seconds histogram\n"),
            "{text}"
        );
        for line in [
            "ontoloop_z_seconds_bucket{m=\"/a\",le=\"0.0025\"} 0\n",
            "ontoloop_z_seconds_bucket{m=\"/a\",le=\"0.005\"} 1\n",
            "ontoloop_z_seconds_bucket{m=\"/a\",le=\"2.5\"} 2\n",
            "ontoloop_z_seconds_bucket{m=\"/a\",le=\"+Inf\"} 2\n",
            "ontoloop_z_seconds_sum{m=\"/a\"} 2.004\n",
            "ontoloop_z_seconds_count{m=\"/a\"} 2\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("other_total"));
        assert_eq!(registry.value("ontoloop_x_total", &[("type", "a\"b")]), 3.0);
        assert_eq!(registry.value("ontoloop_z_seconds", &[("m", "/a")]), 2.0);
        assert_eq!(registry.value("ontoloop_y", &[]), 4.0);
        assert_eq!(registry.value("ontoloop_none", &[]), 0.0);
    }

    #[test]
    fn a_family_keeps_its_kind() {
        let registry = Registry::default();
        registry.add("ontoloop_k_total", "K.", &[], 1.0);
        registry.set("ontoloop_k_total", "K.", &[], 7.0);
        registry.observe("ontoloop_k_total", "K.", &[], 7.0);
        assert_eq!(registry.value("ontoloop_k_total", &[]), 1.0);
        let text = registry.render_matching(|name| name == "ontoloop_k_total");
        assert_eq!(
            text,
            "# HELP ontoloop_k_total K.\n# TYPE ontoloop_k_total counter\nontoloop_k_total 1\n"
        );
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
