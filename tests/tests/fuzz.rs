//! No panic on any input: every RPC of every service, enumerated from the proto descriptor set
//! (`ontoloop_proto::FILE_DESCRIPTOR_SET`, so a new RPC is fuzzed without a change here), is
//! called with generated request bytes through a raw gRPC codec — random bytes, structurally
//! valid messages with hostile field values (empty, near-limit and NUL-carrying strings, invalid
//! UTF-8, extreme numbers and enums, many repeated fields, out-of-range timestamps) and mutated
//! valid requests — on the embedded system with authentication off (so the handlers are reached)
//! and a slice with `auth.mode = "jwt"` and garbage tokens. Generated bodies (random bytes,
//! invalid JSON, JSON of the wrong shape, huge bodies, NUL bytes, valid and mutated events and
//! signals) are published to the events and signals queues, on the in-process queue and on
//! RabbitMQ, and each must be applied (recorded in the analyst's inbox) or dead-lettered with a
//! reason. Asserted: no panic anywhere in the process (a panic hook counts them), no INTERNAL
//! naming a panic, a request that does not decode answered INVALID_ARGUMENT (never INTERNAL),
//! every error has a message, no call hangs or is ended by an HTTP/2 reset instead of a status,
//! no garbage token is admitted, every
//! service is SERVING afterwards. The generator is seeded (`FUZZ_SEED`, printed) and sized by
//! `FUZZ_CASES` (requests plus bodies; `make fuzz` runs 100,000).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use ontoloop_core::{ServiceKind, topics};
use ontoloop_queue::{Message, REASON_HEADER, SharedQueue};
use ontoloop_tests::{Sandbox, tokens, wait_until};
use prost::Message as _;
use prost::bytes::{Buf as _, BufMut as _};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use rand::rngs::StdRng;
use rand::{Rng as _, RngCore as _, SeedableRng as _};
use tonic::Code;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// Requests plus bodies when `FUZZ_CASES` is not set: small enough for `make test` in a debug
/// build.
const DEFAULT_CASES: usize = 3_000;
/// One request in this many goes to the system with `auth.mode = "jwt"`, with a garbage token.
const JWT_EVERY: usize = 10;
/// One generated case in this many is an AMQP body rather than a request.
const AMQP_EVERY: usize = 5;
/// Calls in flight at once.
const CONCURRENCY: usize = 8;
/// A call not answered within this is a hang (the services' own request timeout is shorter).
const HANG: Duration = Duration::from_secs(90);

/// How long the published bodies may go without one more of them applied or dead-lettered.
const QUEUE_STALL: Duration = Duration::from_secs(90);
/// Bodies published to a queue ahead of its consumer at most.
const PUBLISH_AHEAD: u64 = 64;
/// The largest request generated (the services refuse more than `services.max_message_bytes`).
const MAX_REQUEST: usize = 600 * 1024;
/// The ontology of every fuzzed tenant.
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"pricing-page":3,"default":2}}"#;
/// The page every fuzzed tenant holds.
const PAGE: &str = "The Pro plan costs €49 per month. Billing is owned by the Orion team.";
/// The HS256 secret of the jwt system.
const SECRET: &str = "fuzz-secret-that-is-long-enough-for-hs256";

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic in this process (the services run in it), then reports it as usual.
fn count_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        report(info);
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_input_makes_a_service_panic() {
    count_panics();
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = ontoloop_observability::init(&ontoloop_tests::settings(&[]).log);
    }
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(rand::random);
    let cases = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(DEFAULT_CASES);
    println!("fuzz: FUZZ_SEED={seed} FUZZ_CASES={cases}");
    let started = Instant::now();

    let schema = Schema::load();
    let kinds: HashSet<ServiceKind> = schema.methods.iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds.len(),
        ServiceKind::ALL.len(),
        "every service has RPCs"
    );

    let fast_retries = [("queue.retry_delay_ms", "50")];
    let open = Sandbox::embedded(&fast_retries).await;
    let mut jwt_overrides = tokens::jwt(SECRET);
    jwt_overrides.extend_from_slice(&fast_retries);
    let jwt = Sandbox::embedded(&jwt_overrides).await;
    let (rabbit, database) = Sandbox::on_servers("fuzz", &fast_retries).await;

    // The tenants the generator names know an ontology and a page, so requests and events reach
    // its predicates in the graph code (a tenant without one answers under the empty ontology,
    // which maps no slot).
    let run = format!("{:x}", seed as u32);
    for sandbox in [&open, &rabbit] {
        let clients = sandbox.clients();
        for tenant in ["fuzz-a", "fuzz-b"]
            .map(str::to_owned)
            .into_iter()
            .chain(queue_tenants(&run))
        {
            clients
                .push(&tenant, "p0", ontoloop_tests::ontology(ONTOLOGY))
                .await
                .expect("ontology");
            let seq = clients
                .push(
                    &tenant,
                    "p0",
                    ontoloop_tests::doc("pricing", "pricing-page", PAGE, &[], 0.0),
                )
                .await
                .expect("page");
            let settled = sandbox
                .ctx
                .store
                .wait_settled(&tenant, seq as i64, Duration::from_secs(30))
                .await
                .expect("wait");
            assert_eq!(settled, ontoloop_store::Settled::Applied, "{tenant}'s page");
        }
    }

    let amqp_cases = cases / AMQP_EVERY;
    let rpc_cases = cases - amqp_cases;
    let (rpc, amqp) = tokio::join!(
        fuzz_rpcs(&schema, &open, &jwt, seed, rpc_cases),
        fuzz_queues(&open, &rabbit, seed, amqp_cases)
    );

    let mut serving = Vec::new();
    for (name, sandbox) in [("open", &open), ("jwt", &jwt), ("rabbitmq", &rabbit)] {
        for kind in ServiceKind::ALL {
            if !is_serving(sandbox, kind).await {
                serving.push(format!("{name} {}", kind.name()));
            }
        }
    }
    let panics = PANICS.load(Ordering::SeqCst);
    println!(
        "fuzz totals: {} requests ({} ok), {} AMQP bodies ({} applied, {} dead-lettered), \
         {panics} panics, {} s, peak resident memory {} MB",
        rpc.cases,
        rpc.ok,
        amqp.published,
        amqp.applied,
        amqp.dead,
        started.elapsed().as_secs(),
        peak_resident_mb()
    );
    open.shutdown().await.expect("shutdown");
    jwt.shutdown().await.expect("shutdown");
    rabbit.shutdown().await.expect("shutdown");
    let _ = database.drop_now().await;

    assert_eq!(panics, 0, "no panic anywhere in the process (seed {seed})");
    assert!(
        rpc.failures.is_empty(),
        "seed {seed}: {} bad answers, first: {:?}",
        rpc.failures.len(),
        &rpc.failures[..rpc.failures.len().min(5)]
    );
    assert_eq!(rpc.jwt_admitted, 0, "no garbage token is admitted");
    assert!(
        amqp.failures.is_empty(),
        "seed {seed}: {} bodies neither applied nor dead-lettered with a reason, first: {:?}",
        amqp.failures.len(),
        &amqp.failures[..amqp.failures.len().min(5)]
    );
    assert!(serving.is_empty(), "not SERVING after the run: {serving:?}");
    assert_eq!(rpc.cases + amqp.published, cases, "every case was sent");
}

/// The process's peak resident memory (`VmHWM`), in MB; 0 where `/proc` does not say.
fn peak_resident_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb / 1024)
}

// ---- RPCs ----------------------------------------------------------------------------------

/// One RPC, from the descriptor set.
#[derive(Debug, Clone)]
struct Method {
    kind: ServiceKind,
    /// `/ontoloop.v1.RetrievalService/Ask`.
    path: String,
    /// `.ontoloop.v1.AskRequest`.
    input: String,
    client_streaming: bool,
}

/// Every message type and RPC of the ontoloop protos.
struct Schema {
    messages: HashMap<String, DescriptorProto>,
    enums: HashMap<String, Vec<i32>>,
    methods: Vec<Method>,
}

impl Schema {
    fn load() -> Self {
        let set = FileDescriptorSet::decode(ontoloop_proto::FILE_DESCRIPTOR_SET)
            .expect("the descriptor set decodes");
        let mut schema = Schema {
            messages: HashMap::new(),
            enums: HashMap::new(),
            methods: Vec::new(),
        };
        for file in &set.file {
            let prefix = format!(".{}", file.package());
            for message in &file.message_type {
                schema.add_message(&prefix, message);
            }
            for e in &file.enum_type {
                schema.enums.insert(
                    format!("{prefix}.{}", e.name()),
                    e.value.iter().map(|v| v.number()).collect(),
                );
            }
            for service in &file.service {
                let full = format!("{}.{}", file.package(), service.name());
                let kind = ServiceKind::ALL
                    .into_iter()
                    .find(|k| k.grpc_name() == full)
                    .unwrap_or_else(|| panic!("{full} is one of the four services"));
                for method in &service.method {
                    schema.methods.push(Method {
                        kind,
                        path: format!("/{full}/{}", method.name()),
                        input: method.input_type().to_owned(),
                        client_streaming: method.client_streaming(),
                    });
                }
            }
        }
        schema
    }

    fn add_message(&mut self, prefix: &str, message: &DescriptorProto) {
        let name = format!("{prefix}.{}", message.name());
        for nested in &message.nested_type {
            self.add_message(&name, nested);
        }
        for e in &message.enum_type {
            self.enums.insert(
                format!("{name}.{}", e.name()),
                e.value.iter().map(|v| v.number()).collect(),
            );
        }
        self.messages.insert(name, message.clone());
    }
}

/// How a request's bytes are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Random bytes.
    Random,
    /// A well-formed message with hostile values.
    Hostile,
    /// A plausible request with its bytes mutated.
    Mutated,
}

/// Builds protobuf bytes for a message type from its descriptor.
struct Gen<'a> {
    schema: &'a Schema,
    rng: StdRng,
    hostile: bool,
    /// Bytes still allowed for huge values.
    budget: usize,
    tenants: &'a [String],
}

impl Gen<'_> {
    fn message(&mut self, type_name: &str, depth: usize) -> Vec<u8> {
        let mut out = Vec::new();
        if type_name == ".google.protobuf.Timestamp" {
            self.timestamp(&mut out);
            return out;
        }
        if type_name == ".ontoloop.v1.Caller" && (!self.hostile || self.rng.random_bool(0.7)) {
            let tenant = self.tenants[self.rng.random_range(0..self.tenants.len())].clone();
            put_bytes(&mut out, 1, tenant.as_bytes());
            put_bytes(
                &mut out,
                2,
                format!("p{}", self.rng.random_range(0..3)).as_bytes(),
            );
            return out;
        }
        let Some(descriptor) = self.schema.messages.get(type_name) else {
            return out;
        };
        if depth > 6 {
            return out;
        }
        // One member of each oneof (hostile: sometimes none, sometimes two).
        let mut oneofs: BTreeMap<i32, Vec<&FieldDescriptorProto>> = BTreeMap::new();
        for field in &descriptor.field {
            match field.oneof_index {
                Some(index) if !field.proto3_optional() => {
                    oneofs.entry(index).or_default().push(field)
                }
                _ => {
                    let keep = if self.hostile { 0.7 } else { 0.9 };
                    if self.rng.random_bool(keep) {
                        self.field(field, depth, &mut out);
                    }
                }
            }
        }
        for members in oneofs.values() {
            let picks = if self.hostile {
                self.rng.random_range(0..=2)
            } else {
                1
            };
            for _ in 0..picks {
                let field = members[self.rng.random_range(0..members.len())];
                self.field(field, depth, &mut out);
            }
        }
        out
    }

    fn field(&mut self, field: &FieldDescriptorProto, depth: usize, out: &mut Vec<u8>) {
        let count = if field.label() == Label::Repeated {
            if self.hostile && self.rng.random_bool(0.1) {
                self.rng.random_range(50..500)
            } else {
                self.rng.random_range(0..4)
            }
        } else {
            1
        };
        let number = field.number() as u32;
        for _ in 0..count {
            if out.len() > MAX_REQUEST {
                return;
            }
            match field.r#type() {
                Type::Double => {
                    put_key(out, number, 1);
                    out.extend(self.double().to_le_bytes());
                }
                Type::Float => {
                    put_key(out, number, 5);
                    out.extend((self.double() as f32).to_le_bytes());
                }
                Type::Fixed64 | Type::Sfixed64 => {
                    put_key(out, number, 1);
                    out.extend(self.number().to_le_bytes());
                }
                Type::Fixed32 | Type::Sfixed32 => {
                    put_key(out, number, 5);
                    out.extend((self.number() as u32).to_le_bytes());
                }
                Type::Sint32 | Type::Sint64 => {
                    let n = self.number() as i64;
                    put_key(out, number, 0);
                    put_varint(out, ((n << 1) ^ (n >> 63)) as u64);
                }
                Type::Enum => {
                    let value = self.enumeration(field.type_name());
                    put_key(out, number, 0);
                    put_varint(out, value as i64 as u64);
                }
                Type::Bool => {
                    put_key(out, number, 0);
                    let value = if self.hostile && self.rng.random_bool(0.3) {
                        self.number()
                    } else {
                        self.rng.random_range(0..2)
                    };
                    put_varint(out, value);
                }
                Type::Int64 | Type::Uint64 | Type::Int32 | Type::Uint32 => {
                    put_key(out, number, 0);
                    let value = self.number();
                    put_varint(out, value);
                }
                Type::String | Type::Bytes => {
                    let mut text = self.text(field.name());
                    // Invalid UTF-8 in a string field fails the whole decode; mostly keep the
                    // message decodable so the handler is reached.
                    if field.r#type() == Type::String && self.rng.random_bool(0.9) {
                        text = String::from_utf8_lossy(&text).into_owned().into_bytes();
                    }
                    put_bytes(out, number, &text);
                }
                Type::Message => {
                    let nested = self.message(field.type_name(), depth + 1);
                    put_bytes(out, number, &nested);
                }
                Type::Group => {}
            }
        }
    }

    fn number(&mut self) -> u64 {
        if !self.hostile {
            return self.rng.random_range(0..100);
        }
        const EDGES: [u64; 10] = [
            0,
            1,
            u64::MAX,
            i64::MAX as u64,
            i64::MIN as u64,
            u32::MAX as u64,
            i32::MAX as u64,
            i32::MIN as i64 as u64,
            1 << 53,
            86_400 * 365 * 10_000,
        ];
        if self.rng.random_bool(0.7) {
            EDGES[self.rng.random_range(0..EDGES.len())]
        } else {
            self.rng.random()
        }
    }

    fn double(&mut self) -> f64 {
        if !self.hostile {
            return self.rng.random_range(0.0..1.0);
        }
        const EDGES: [f64; 10] = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            1.0,
            -1.0,
            f64::MAX,
            f64::MIN_POSITIVE,
            1e-320,
        ];
        if self.rng.random_bool(0.7) {
            EDGES[self.rng.random_range(0..EDGES.len())]
        } else {
            f64::from_bits(self.rng.random())
        }
    }

    fn enumeration(&mut self, type_name: &str) -> i32 {
        let known = self
            .schema
            .enums
            .get(type_name)
            .cloned()
            .unwrap_or_default();
        if self.hostile && (known.is_empty() || self.rng.random_bool(0.3)) {
            const ODD: [i32; 5] = [-1, 99, i32::MAX, i32::MIN, 0];
            return ODD[self.rng.random_range(0..ODD.len())];
        }
        let valid: Vec<i32> = known.iter().copied().filter(|v| *v != 0).collect();
        if valid.is_empty() {
            0
        } else {
            valid[self.rng.random_range(0..valid.len())]
        }
    }

    fn timestamp(&mut self, out: &mut Vec<u8>) {
        let now = tokens::now() as i64;
        let (seconds, nanos) = if self.hostile {
            const SECONDS: [i64; 9] = [
                0,
                -1,
                -62_135_596_800,
                -62_135_596_801,
                253_402_300_799,
                253_402_300_800,
                i64::MIN,
                i64::MAX,
                1_780_000_000,
            ];
            const NANOS: [i32; 6] = [0, 999_999_999, 1_000_000_000, -1, i32::MAX, i32::MIN];
            (
                SECONDS[self.rng.random_range(0..SECONDS.len())],
                NANOS[self.rng.random_range(0..NANOS.len())],
            )
        } else {
            (now - self.rng.random_range(0..86_400 * 365), 0)
        };
        put_key(out, 1, 0);
        put_varint(out, seconds as u64);
        put_key(out, 2, 0);
        put_varint(out, nanos as i64 as u64);
    }

    fn text(&mut self, field: &str) -> Vec<u8> {
        if !self.hostile || self.rng.random_bool(0.25) {
            return plain_text(&mut self.rng, field, self.tenants).into_bytes();
        }
        hostile_text(&mut self.rng, &mut self.budget)
    }
}

/// A plausible value for a field of this name.
fn plain_text(rng: &mut StdRng, field: &str, tenants: &[String]) -> String {
    const WORDS: [&str; 12] = [
        "Pro",
        "price",
        "Billing",
        "owned_by",
        "What does the Pro plan cost?",
        "The Pro plan costs €49 per month.",
        "patch",
        "rebuild",
        "team-a",
        "svc-1",
        "Orion",
        "financial",
    ];
    match field {
        "tenant" => tenants[rng.random_range(0..tenants.len())].clone(),
        "principal" | "agent_id" => format!("p{}", rng.random_range(0..3)),
        "idempotency_key" | "update_id" | "project" | "doc_id" | "item_id" => {
            format!("k{}", rng.random_range(0..50))
        }
        "ontology_json" => r#"{"predicates":[{"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]}],"authority":{"default":2}}"#.to_owned(),
        _ => WORDS[rng.random_range(0..WORDS.len())].to_owned(),
    }
}

/// A hostile string (or bytes that are no string at all).
fn hostile_text(rng: &mut StdRng, budget: &mut usize) -> Vec<u8> {
    match rng.random_range(0..14) {
        0 => Vec::new(),
        1 => b"  \t\r\n ".to_vec(),
        2 => b"a\0b\0".to_vec(),
        3 => vec![0xff, 0xfe, b'a', 0xc0, 0x80, 0xed, 0xa0, 0x80],
        4 => {
            const SIZES: [usize; 10] = [
                1023, 1024, 1025, 4096, 16_384, 65_535, 65_536, 65_537, 262_144, 262_145,
            ];
            let size = SIZES[rng.random_range(0..SIZES.len())];
            if size > *budget {
                return b"x".repeat(rng.random_range(100..1000));
            }
            *budget -= size;
            let unit: &[u8] = if rng.random_bool(0.5) {
                b"The Pro plan costs \xe2\x82\xac49 per month. "
            } else {
                b"x"
            };
            unit.iter().copied().cycle().take(size).collect()
        }
        5 => "é\u{301}\u{202e}👍🏽\u{fe0f}\u{10ffff}\u{feff}Ω"
            .as_bytes()
            .to_vec(),
        6 => b"'; DROP TABLE facts; -- \" OR 1=1".to_vec(),
        7 => {
            const JSON: [&str; 6] = [
                "{",
                r#"{"predicates":[{}]}"#,
                r#"{"predicates":[{"name":"","patterns":["{s}{o}{s}"]}],"authority":{"default":-1e400}}"#,
                r#"{"predicates":null,"authority":[]}"#,
                "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
                r#"{"predicates":[{"name":"p","subject_type":"t","object_type":"number","patterns":["The {s} {o:number} {o:number}"]}]}"#,
            ];
            JSON[rng.random_range(0..JSON.len())].as_bytes().to_vec()
        }
        8 => b"%s%n{}{0}{{}}\\u0000\\".to_vec(),
        9 => "The Pro plan costs €49 per month. The Pro plan costs €50 per month. "
            .repeat(rng.random_range(1..200))
            .into_bytes(),
        10 => b"../../etc/passwd http://169.254.169.254/latest".to_vec(),
        11 => (0u8..32).collect(),
        12 => {
            const NUMBERS: [&str; 6] = ["-9223372036854775809", "NaN", "1e309", "-0", "", "0x10"];
            NUMBERS[rng.random_range(0..NUMBERS.len())]
                .as_bytes()
                .to_vec()
        }
        _ => {
            let mut bytes = vec![0u8; rng.random_range(0..64)];
            rng.fill_bytes(&mut bytes);
            bytes
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_key(out: &mut Vec<u8>, number: u32, wire: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire));
}

fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn random_bytes(rng: &mut StdRng) -> Vec<u8> {
    let len = if rng.random_bool(0.05) {
        rng.random_range(1_000..64_000)
    } else {
        rng.random_range(0..256)
    };
    let mut bytes = vec![0u8; len];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// Flips, inserts, deletes, truncates or repeats a few spans of `bytes`.
fn mutate(rng: &mut StdRng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..rng.random_range(1..=4) {
        let len = bytes.len();
        match rng.random_range(0..8) {
            0 if len > 0 => {
                let at = rng.random_range(0..len);
                bytes[at] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let at = rng.random_range(0..len);
                bytes[at] = rng.random();
            }
            2 => {
                let at = rng.random_range(0..=len);
                let mut extra = vec![0u8; rng.random_range(1..8)];
                rng.fill_bytes(&mut extra);
                bytes.splice(at..at, extra);
            }
            3 if len > 0 => {
                let from = rng.random_range(0..len);
                let to = rng.random_range(from..=len.min(from + 16));
                bytes.drain(from..to);
            }
            4 if len > 0 => bytes.truncate(rng.random_range(0..len)),
            5 if len > 0 => {
                let from = rng.random_range(0..len);
                let to = rng.random_range(from..=len);
                let span = bytes[from..to].to_vec();
                bytes.splice(to..to, span);
            }
            6 => {
                // An unknown field with a random wire type and whatever follows.
                put_key(
                    &mut bytes,
                    rng.random_range(1..1000),
                    rng.random_range(0..8),
                );
                let mut tail = vec![0u8; rng.random_range(0..12)];
                rng.fill_bytes(&mut tail);
                bytes.extend(tail);
            }
            _ => {
                // A varint that never ends within 64 bits.
                let at = rng.random_range(0..=len);
                bytes.splice(at..at, [0xffu8; 11]);
            }
        }
    }
    bytes
}

/// The frames of one generated call (one for a unary RPC, any number for a stream).
fn request_frames(schema: &Schema, method: &Method, style: Style, seed: u64) -> Vec<Vec<u8>> {
    let tenants = ["fuzz-a".to_owned(), "fuzz-b".to_owned()];
    let mut rng = StdRng::seed_from_u64(seed);
    let frames = if method.client_streaming {
        if rng.random_bool(0.1) {
            rng.random_range(20..200)
        } else {
            rng.random_range(0..4)
        }
    } else {
        1
    };
    let mut budget = MAX_REQUEST;
    (0..frames)
        .map(|_| {
            let mut maker = Gen {
                schema,
                rng: StdRng::seed_from_u64(rng.random()),
                hostile: style == Style::Hostile,
                budget,
                tenants: &tenants,
            };
            let frame = match style {
                Style::Random => random_bytes(&mut maker.rng),
                Style::Hostile => maker.message(&method.input, 0),
                Style::Mutated => {
                    let valid = maker.message(&method.input, 0);
                    mutate(&mut maker.rng, valid)
                }
            };
            budget = budget.saturating_sub(frame.len());
            frame
        })
        .collect()
}

/// A header that is no valid bearer of the jwt system; `None`: no header.
fn garbage_authorization(rng: &mut StdRng) -> Option<String> {
    let holder = tokens::Holder {
        tenant: "fuzz-a",
        principal: "p0",
        groups: &[],
        roles: &[],
    };
    let base64 = |rng: &mut StdRng, n: usize| -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        (0..n)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
            .collect()
    };
    Some(match rng.random_range(0..9) {
        0 => return None,
        1 => "Bearer ".to_owned(),
        2 => {
            let (a, b, c) = (base64(rng, 36), base64(rng, 80), base64(rng, 43));
            format!("Bearer {a}.{b}.{c}")
        }
        // alg "none", claims of a real holder, no signature.
        3 => "Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJwMCIsInRlbmFudCI6ImZ1enotYSIsImlzcyI6Imh0dHBzOi8vaXNzdWVyLnRlc3QiLCJhdWQiOiJvbnRvbG9vcCIsImV4cCI6OTk5OTk5OTk5OX0.".to_owned(),
        4 => format!("Bearer {}", "a".repeat(8_000)),
        5 => {
            let other = ontoloop_tests::settings(&tokens::jwt(
                "another-secret-that-is-long-enough-for-hs256",
            ));
            format!("Bearer {}", holder.token(&other.auth))
        }
        6 => {
            // The right secret, expired an hour ago.
            let right = ontoloop_tests::settings(&tokens::jwt(SECRET));
            let token = holder.token_at(&right.auth, tokens::now() - 7_200, 60);
            format!("Bearer {token}")
        }
        7 => format!("Basic {}", base64(rng, 20)),
        _ => (0..rng.random_range(0..200))
            .map(|_| rng.random_range(0x20u8..0x7f) as char)
            .collect(),
    })
}

/// What a call came back with.
#[derive(Debug)]
enum Outcome {
    Ok,
    Refused(Code, String),
    /// No answer within [`HANG`].
    Hung,
}

async fn call(
    channel: Channel,
    method: &Method,
    frames: Vec<Vec<u8>>,
    authorization: Option<String>,
) -> Outcome {
    let path = PathAndQuery::try_from(method.path.as_str()).expect("a valid path");
    let mut grpc = tonic::client::Grpc::new(channel);
    let answered = tokio::time::timeout(HANG, async {
        grpc.ready()
            .await
            .map_err(|err| tonic::Status::unavailable(err.to_string()))?;
        let header = authorization
            .as_deref()
            .and_then(|v| tonic::metadata::MetadataValue::try_from(v).ok());
        if method.client_streaming {
            let request = with_header(futures::stream::iter(frames), header);
            grpc.client_streaming(request, path, RawCodec)
                .await
                .map(drop)
        } else {
            let frame = frames.into_iter().next().unwrap_or_default();
            grpc.unary(with_header(frame, header), path, RawCodec)
                .await
                .map(drop)
        }
    })
    .await;
    match answered {
        Err(_) => Outcome::Hung,
        Ok(Ok(())) => Outcome::Ok,
        Ok(Err(status)) => Outcome::Refused(status.code(), status.message().to_owned()),
    }
}

/// `message` with `header` as its `authorization`, if any.
fn with_header<T>(
    message: T,
    header: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(value) = header {
        request.metadata_mut().insert("authorization", value);
    }
    request
}

#[derive(Default)]
struct RpcCounts {
    cases: usize,
    ok: usize,
    by_code: BTreeMap<String, usize>,
}

#[derive(Default)]
struct RpcReport {
    cases: usize,
    ok: usize,
    jwt_admitted: usize,
    /// INTERNAL answers by their message's start, to show what they were.
    internal: BTreeMap<String, usize>,
    failures: Vec<String>,
}

async fn fuzz_rpcs(
    schema: &Schema,
    open: &Sandbox,
    jwt: &Sandbox,
    seed: u64,
    cases: usize,
) -> RpcReport {
    let channels = |sandbox: &Sandbox| -> HashMap<ServiceKind, Channel> {
        ServiceKind::ALL
            .into_iter()
            .map(|kind| (kind, sandbox.channel(kind)))
            .collect()
    };
    let (open_channels, jwt_channels) = (channels(open), channels(jwt));
    let methods = &schema.methods;
    let results = futures::stream::iter(0..cases)
        .map(|i| {
            let method = &methods[i % methods.len()];
            let style = [Style::Random, Style::Hostile, Style::Mutated][(i / methods.len()) % 3];
            let case_seed = seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let on_jwt = (i / methods.len() / 3) % JWT_EVERY == JWT_EVERY - 1;
            let channel = if on_jwt {
                jwt_channels[&method.kind].clone()
            } else {
                open_channels[&method.kind].clone()
            };
            async move {
                let frames = request_frames(schema, method, style, case_seed);
                let authorization = if on_jwt {
                    garbage_authorization(&mut StdRng::seed_from_u64(!case_seed))
                } else {
                    None
                };
                let outcome = call(channel, method, frames, authorization).await;
                (i, method, style, on_jwt, outcome)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;

    let mut table: BTreeMap<String, RpcCounts> = BTreeMap::new();
    let mut report = RpcReport::default();
    for (i, method, style, on_jwt, outcome) in results {
        let row = table.entry(method.path.clone()).or_default();
        row.cases += 1;
        report.cases += 1;
        let case = format!("case {i} ({style:?}, jwt {on_jwt}) {}", method.path);
        match outcome {
            Outcome::Ok => {
                row.ok += 1;
                report.ok += 1;
                if on_jwt {
                    report.jwt_admitted += 1;
                }
            }
            Outcome::Refused(code, message) => {
                *row.by_code.entry(format!("{code:?}")).or_default() += 1;
                if message.trim().is_empty() {
                    report
                        .failures
                        .push(format!("{case}: {code:?} without a message"));
                }
                if code == Code::Internal {
                    let start: String = message.chars().take(60).collect();
                    *report.internal.entry(start).or_default() += 1;
                }
                if code == Code::Internal && message.to_lowercase().contains("panic") {
                    report.failures.push(format!("{case}: {message}"));
                }
                if code == Code::Internal && message.contains("decode") {
                    // A request that does not decode is the caller's error.
                    report
                        .failures
                        .push(format!("{case}: INTERNAL for a bad request: {message}"));
                }
                if code == Code::Unknown {
                    // A handler that died mid-call, a broken connection: no answer of the service.
                    report.failures.push(format!("{case}: Unknown: {message}"));
                }
                if message.starts_with("h2 protocol error") || message == "operation was canceled" {
                    // The call was ended by an HTTP/2 reset, not answered: a status too large
                    // for the client's header limit is reset by the client, and after enough
                    // resets the server closes the connection under every call on it.
                    report
                        .failures
                        .push(format!("{case}: reset, not answered: {code:?} {message}"));
                }
            }
            Outcome::Hung => {
                *row.by_code.entry("hung".to_owned()).or_default() += 1;
                report
                    .failures
                    .push(format!("{case}: no answer in {HANG:?}"));
            }
        }
    }
    println!("\n{:<48} | {:>6} | {:>6} | by code", "rpc", "cases", "ok");
    for (rpc, row) in &table {
        let codes: Vec<String> = row
            .by_code
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        println!(
            "{rpc:<48} | {:>6} | {:>6} | {}",
            row.cases,
            row.ok,
            codes.join(", ")
        );
    }
    println!(
        "{:<48} | {:>6} | {:>6} | {} jwt-slice calls admitted",
        "total", report.cases, report.ok, report.jwt_admitted
    );
    let mut internal: Vec<_> = report.internal.iter().collect();
    internal.sort_by_key(|r| std::cmp::Reverse(*r.1));
    for (message, n) in internal.iter().take(8) {
        println!("  Internal {n:>6}: {message}");
    }
    assert_eq!(table.len(), methods.len().min(cases), "every RPC got cases");
    report
}

/// Passes request bytes through as they are, and gives the answer's bytes back.
#[derive(Clone, Copy)]
struct RawCodec;
struct RawEncoder;
struct RawDecoder;

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let mut bytes = vec![0u8; src.remaining()];
        src.copy_to_slice(&mut bytes);
        Ok(Some(bytes))
    }
}

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

async fn is_serving(sandbox: &Sandbox, kind: ServiceKind) -> bool {
    wait_until(Duration::from_secs(20), || {
        let mut client = HealthClient::new(sandbox.channel(kind));
        async move {
            client
                .check(HealthCheckRequest {
                    service: kind.grpc_name().into(),
                })
                .await
                .is_ok_and(|r| r.into_inner().status == 1)
        }
    })
    .await
}

// ---- AMQP bodies ---------------------------------------------------------------------------

#[derive(Default)]
struct AmqpReport {
    published: usize,
    applied: usize,
    dead: usize,
    failures: Vec<String>,
}

async fn fuzz_queues(open: &Sandbox, rabbit: &Sandbox, seed: u64, cases: usize) -> AmqpReport {
    let run = format!("{:x}", seed as u32);
    let slots = [
        ("memory", open, topics::EVENTS),
        ("memory", open, topics::SIGNALS),
        ("rabbitmq", rabbit, topics::EVENTS),
        ("rabbitmq", rabbit, topics::SIGNALS),
    ];
    let mut report = AmqpReport::default();
    println!(
        "\n{:<8} {:<18} | {:>6} | {:>7} | {:>13}",
        "queue", "", "bodies", "applied", "dead-lettered"
    );
    let runs = slots
        .iter()
        .enumerate()
        .map(|(slot, (backend, sandbox, queue))| {
            let n = cases / slots.len() + usize::from(slot < cases % slots.len());
            let run = run.clone();
            async move {
                let outcome = fuzz_queue(sandbox, queue, seed ^ slot as u64, &run, n).await;
                (*backend, *queue, n, outcome)
            }
        });
    for (backend, queue, n, (applied, dead, failures)) in futures::future::join_all(runs).await {
        println!("{backend:<8} {queue:<18} | {n:>6} | {applied:>7} | {dead:>13}",);
        report.published += n;
        report.applied += applied;
        report.dead += dead;
        report.failures.extend(failures);
    }
    report
}

/// Publishes `n` generated bodies to `queue` and waits until each is applied (in the analyst's
/// inbox) or dead-lettered; (applied, dead-lettered, failures).
async fn fuzz_queue(
    sandbox: &Sandbox,
    queue: &str,
    seed: u64,
    run: &str,
    n: usize,
) -> (usize, usize, Vec<String>) {
    let shared: SharedQueue = sandbox.ctx.queue.clone();
    shared.declare(queue).await.expect("declare");
    let dead: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let mut letters = shared
        .consume_dead_letters(queue)
        .await
        .expect("consume the dead letters");
    let collector = {
        let dead = dead.clone();
        tokio::spawn(async move {
            while let Some(Ok(letter)) = letters.next().await {
                let reason = letter
                    .message
                    .headers
                    .get(REASON_HEADER)
                    .cloned()
                    .unwrap_or_default();
                dead.lock()
                    .expect("lock")
                    .insert(letter.message.id.clone(), reason);
                let _ = letter.ack().await;
            }
        })
    };
    let since = chrono::Utc::now() - chrono::Duration::seconds(5);
    let tenants = queue_tenants(run);
    // What is kept of each body is its hash, the ids it may be recorded under and its start: a
    // third of the bodies are documents of up to several MB, and holding them all (and reading
    // them back from the inbox at once) grew this test past 20 GB at 100,000 cases.
    let prefix = if queue == topics::EVENTS { "evt" } else { "in" };
    let mut published: Vec<Published> = Vec::with_capacity(n);
    let mut rng = StdRng::seed_from_u64(seed);
    for i in 0..n {
        let body = amqp_body(&mut rng, queue, &tenants);
        let id = format!("fz-{run}-{i}");
        // The ids each message may be recorded under in the inbox: its own, or scoped to the
        // tenant its body names.
        let mut ids = vec![id.clone()];
        if let Some(tenant) = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("tenant").and_then(|t| t.as_str()).map(str::to_owned))
        {
            ids.push(ontoloop_queue::scoped_id(prefix, &tenant, &id));
        }
        published.push(Published {
            id: id.clone(),
            ids,
            hash: body_hash(&body),
            start: String::from_utf8_lossy(&body[..body.len().min(640)])
                .chars()
                .take(160)
                .collect(),
        });
        // Published as the analyst takes them, so the in-process queue does not hold thousands
        // of large bodies at once (a broker would page them to disk).
        while shared.ready_count(queue).await.unwrap_or(0) >= PUBLISH_AHEAD {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        shared
            .publish(queue, Message::with_id(id, body))
            .await
            .expect("publish");
    }

    let store = sandbox.ctx.store.clone();
    let mut recorded: HashSet<String> = HashSet::new();
    // Hashes of the bodies seen in the inbox, with the ids they were recorded under.
    let mut bodies: HashMap<u64, Vec<String>> = HashMap::new();
    let mut cursor = since;
    let mut last_rescan: Option<Instant> = None;
    // Bodies are waited for while the analyst makes progress on them: the run fails when none
    // settled for QUEUE_STALL (a body neither applied nor dead-lettered), not because a busy
    // machine reads a third of them — documents of up to 1.5 MB — slower than usual.
    let mut settled_before = 0;
    let mut last_progress = Instant::now();
    let (applied, dead_count, failures) = loop {
        let mut newest = cursor;
        scan_inbox(&store, queue, cursor, |row| {
            newest = newest.max(row.received_at - chrono::Duration::seconds(1));
            recorded.insert(row.message_id.clone());
            bodies
                .entry(body_hash(row.body.as_bytes()))
                .or_default()
                .push(row.message_id.clone());
        })
        .await;
        cursor = newest;
        let dead = dead.lock().expect("lock").clone();
        let mut applied = 0;
        let mut dead_count = 0;
        let mut failures = Vec::new();
        let mut pending: Vec<&Published> = Vec::new();
        for body in &published {
            if let Some(reason) = dead.get(&body.id) {
                dead_count += 1;
                let lower = reason.to_lowercase();
                if reason.trim().is_empty() {
                    failures.push(format!(
                        "{queue} {}: dead-lettered without a reason",
                        body.id
                    ));
                } else if lower.contains("panick") || lower.contains("gave no outcome") {
                    failures.push(format!("{queue} {}: {reason}", body.id));
                }
            } else if body.ids.iter().any(|id| recorded.contains(id)) {
                applied += 1;
            } else {
                pending.push(body);
            }
        }
        if !pending.is_empty() && pending.len() <= 64 {
            // A row committed late with an earlier time than the cursor is looked up by its id.
            for body in &pending {
                for candidate in &body.ids {
                    if store
                        .inbox_contains(queue, candidate)
                        .await
                        .unwrap_or(false)
                    {
                        recorded.insert(candidate.clone());
                    }
                }
            }
            // The analyst may record a message under another id than its own (an event it put
            // back and took again): its exact body in the inbox is the commit that applied it.
            // The whole window is read again now and then, a page at a time.
            if last_rescan.is_none_or(|at| at.elapsed() >= Duration::from_secs(10)) {
                last_rescan = Some(Instant::now());
                scan_inbox(&store, queue, since, |row| {
                    let ids = bodies.entry(body_hash(row.body.as_bytes())).or_default();
                    if !ids.contains(&row.message_id) {
                        ids.push(row.message_id.clone());
                    }
                })
                .await;
            }
            let before = pending.len();
            pending.retain(|body| {
                !body.ids.iter().any(|id| recorded.contains(id)) && !bodies.contains_key(&body.hash)
            });
            applied += before - pending.len();
        }
        if pending.len() < n - settled_before {
            settled_before = n - pending.len();
            last_progress = Instant::now();
        }
        if pending.is_empty() || last_progress.elapsed() >= QUEUE_STALL {
            for body in pending {
                failures.push(format!(
                    "{queue} {}: neither applied nor dead-lettered: {} \
                     (the same body in the inbox as {:?})",
                    body.id,
                    body.start,
                    bodies.get(&body.hash)
                ));
            }
            break (applied, dead_count, failures);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    collector.abort();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for reason in dead.lock().expect("lock").values() {
        let start: String = reason.chars().take(70).collect();
        *reasons.entry(start).or_default() += 1;
    }
    let mut reasons: Vec<_> = reasons.into_iter().collect();
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (reason, count) in reasons.iter().take(4) {
        println!(
            "  {} {queue} dead-lettered {count:>5}: {reason}",
            sandbox.ctx.queue.kind()
        );
    }
    (applied, dead_count, failures)
}

/// What the queue fuzzer keeps of a body it published.
struct Published {
    id: String,
    /// The ids the analyst may record it under.
    ids: Vec<String>,
    hash: u64,
    /// Its first characters, for a failure message.
    start: String,
}

fn body_hash(body: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hash as _, Hasher as _};
    let mut hasher = DefaultHasher::new();
    body.hash(&mut hasher);
    hasher.finish()
}

/// Hands every inbox row of `queue` received at or after `since` to `visit`, a page at a time.
async fn scan_inbox(
    store: &ontoloop_store::Store,
    queue: &str,
    since: chrono::DateTime<chrono::Utc>,
    mut visit: impl FnMut(&ontoloop_store::InboxMessage),
) {
    let mut after = 0;
    while let Ok(rows) = store.inbox_since(queue, since, after, 64).await {
        let Some(last) = rows.last() else { break };
        after = last.id;
        rows.iter().for_each(&mut visit);
    }
}

/// The tenants bodies published to the queues name (not those of the requests, whose intake
/// sequence numbers a body's `seq` could otherwise name).
fn queue_tenants(run: &str) -> [String; 2] {
    [format!("fuzzq-{run}-a"), format!("fuzzq-{run}-b")]
}

/// A body for `queue`: random bytes, invalid JSON, JSON of the wrong shape, a huge body, NUL
/// bytes, or a valid (sometimes mutated) event or signal with hostile values.
fn amqp_body(rng: &mut StdRng, queue: &str, tenants: &[String]) -> Vec<u8> {
    let tenant = tenants[rng.random_range(0..tenants.len())].clone();
    let valid = |rng: &mut StdRng, text: &mut dyn FnMut(&mut StdRng) -> String| {
        if queue == topics::EVENTS {
            valid_event(rng, &tenant, text)
        } else {
            valid_signal(rng, &tenant, text)
        }
    };
    let mut plain = |rng: &mut StdRng| plain_text(rng, "", tenants);
    match rng.random_range(0..9) {
        0 => random_bytes(rng),
        1 => {
            let body = valid(rng, &mut plain).to_string().into_bytes();
            let cut = rng.random_range(0..body.len().max(1));
            body[..cut].to_vec()
        }
        2 => {
            const SHAPES: [&str; 10] = [
                "[]",
                "null",
                "42",
                r#""text""#,
                "{}",
                r#"{"tenant":7}"#,
                r#"{"tenant":"fuzz","type":9}"#,
                r#"{"tenant":["a"],"type":"doc.upsert"}"#,
                r#"{"tenant":"fuzz","at":"2026-09-01T00:00:00Z","type":"doc.upsert","doc_id":{},"origin":[],"body":null}"#,
                r#"{"tenant":"  ","at":"2026-09-01T00:00:00Z","type":"entity_missing","entity":"x"}"#,
            ];
            if rng.random_bool(0.1) {
                let depth = rng.random_range(100..20_000);
                format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
            } else {
                SHAPES[rng.random_range(0..SHAPES.len())]
                    .as_bytes()
                    .to_vec()
            }
        }
        3 => {
            let size = rng.random_range(100_000..1_500_000);
            let mut huge = |_: &mut StdRng| "All work and no play. ".repeat(size / 22);
            valid(rng, &mut huge).to_string().into_bytes()
        }
        4 => {
            if rng.random_bool(0.5) {
                let mut nul = |_: &mut StdRng| "Service 1 is owned by the \u{0} team.".to_owned();
                valid(rng, &mut nul).to_string().into_bytes()
            } else {
                let mut body = valid(rng, &mut plain).to_string().into_bytes();
                let at = rng.random_range(0..=body.len());
                body.insert(at, 0);
                body
            }
        }
        5 | 6 => {
            let mut budget = 300_000;
            let mut hostile = |rng: &mut StdRng| {
                String::from_utf8_lossy(&hostile_text(rng, &mut budget)).into_owned()
            };
            valid(rng, &mut hostile).to_string().into_bytes()
        }
        7 => {
            let body = valid(rng, &mut plain).to_string().into_bytes();
            mutate(rng, body)
        }
        _ => {
            let mut value = valid(rng, &mut plain);
            const ODD: [(&str, &str); 6] = [
                ("seq", "-1"),
                ("seq", "99999999999999999999"),
                ("at", r#""+275760-09-13T00:00:00Z""#),
                ("at", r#""0000-00-00T00:00:00Z""#),
                ("severity", r#""apocalyptic""#),
                ("type", r#""entity.missing""#),
            ];
            let (key, odd) = ODD[rng.random_range(0..ODD.len())];
            if let (Some(map), Ok(odd)) = (value.as_object_mut(), serde_json::from_str(odd)) {
                map.insert(key.to_owned(), odd);
            }
            value.to_string().into_bytes()
        }
    }
}

fn valid_event(
    rng: &mut StdRng,
    tenant: &str,
    text: &mut dyn FnMut(&mut StdRng) -> String,
) -> serde_json::Value {
    use serde_json::json;
    let at = "2026-09-01T00:00:00Z";
    let mut event = match rng.random_range(0..8) {
        0 | 1 => json!({"type": "doc.upsert", "doc_id": text(rng), "title": text(rng),
            "origin": text(rng), "body": text(rng), "acl": [text(rng)]}),
        2 => json!({"type": "record.set", "source": text(rng), "entity": text(rng),
            "predicate": text(rng), "value": text(rng)}),
        3 => {
            json!({"type": "record.rename", "source": text(rng), "old": text(rng), "new": text(rng)})
        }
        4 => json!({"type": "ontology.set", "ontology": {"predicates": [{"name": text(rng),
            "subject_type": text(rng), "object_type": "text", "patterns": [text(rng)]}],
            "authority": {"default": 2}}}),
        5 => json!({"type": "graph.maintain", "mode": text(rng)}),
        6 => {
            let file = text(rng);
            json!({"type": "docs.push", "changed_files": [file.clone()],
                "contents": {file: format!("---\nid: {}\nis_a: service\nowned_by: {}\n---\n", text(rng), text(rng))}})
        }
        _ => json!({"type": "employee.hired", "id": text(rng), "name": text(rng),
            "team": text(rng), "role": text(rng)}),
    };
    if let Some(map) = event.as_object_mut() {
        map.insert("tenant".to_owned(), json!(tenant));
        map.insert("at".to_owned(), json!(at));
    }
    event
}

fn valid_signal(
    rng: &mut StdRng,
    tenant: &str,
    text: &mut dyn FnMut(&mut StdRng) -> String,
) -> serde_json::Value {
    const TYPES: [&str; 5] = [
        "entity_missing",
        "relationship_unknown",
        "temporal_stale",
        "confidence_drop",
        "query_pattern",
    ];
    const SEVERITIES: [&str; 4] = ["low", "medium", "high", "critical"];
    serde_json::json!({
        "tenant": tenant,
        "type": TYPES[rng.random_range(0..TYPES.len())],
        "query": text(rng),
        "entity": text(rng),
        "relationship": text(rng),
        "sector": text(rng),
        "agent_id": text(rng),
        "idempotency_key": format!("k{}", rng.random::<u32>()),
        "at": "2026-09-01T00:00:00Z",
        "severity": SEVERITIES[rng.random_range(0..SEVERITIES.len())],
    })
}
