//! `ontoloop mcp` with the official MCP Python SDK (`mcp` from PyPI, in the project's `.venv/`) as
//! its client, over stdio and over streamable HTTP, against `ontoloop up` with
//! `auth.mode = "jwt"` and a small world loaded: the client lists the eight tools (each with a
//! description and input and output schemas) and calls `ask`, `validate`, `cite` and `search`; the answers
//! carry the same values, statuses, hedges, provenance and passages as the gRPC API gives the
//! same caller for the same questions, claims and citation. The caller is the token only: over stdio the one the server was
//! started with, over HTTP each request's own header (none: refused), never the arguments.
//! The client is `tests/python/mcp_client.py`; it prints what it got and asserts nothing.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ontoloop::client::{Bearer, Clients};
use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_testkit::process::{Up, ports_env};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");
const SECRET: &str = "mcp-test-secret-0123456789abcdef0123";
const TENANT: &str = "acme";

/// The world: an ontology, a pricing page, a forum post (low authority: its answers are
/// hedged), an architecture page (a two-hop question) and a handbook no relation of the
/// ontology reads (its question is answered with a passage), as `ontoloop ingest` reads them.
const WORLD: &str = r##"[
  {"type":"ontology.set","ontology":{"predicates":[
    {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
    {"name":"depends_on","subject_type":"service","object_type":"service","patterns":["{s} depends on {o}."]},
    {"name":"maintained_by","subject_type":"service","object_type":"team","patterns":["{s} is maintained by the {o} team."]}],
    "authority":{"pricing-page":3,"wiki":2,"forum":1,"default":1}}},
  {"type":"doc.upsert","doc_id":"pricing","origin":"pricing-page","body":"The Pro plan costs €49 per month."},
  {"type":"doc.upsert","doc_id":"forum-post","origin":"forum","body":"The Starter plan costs €9 per month."},
  {"type":"doc.upsert","doc_id":"architecture","origin":"wiki","body":"Kite depends on Ledger. Ledger is maintained by the Payments team."},
  {"type":"doc.upsert","doc_id":"handbook","origin":"wiki","body":"# Remote access\n\nReset your VPN token from the self-service portal."}
]"##;

const QUESTIONS: [&str; 4] = [
    "How much does the Pro plan cost?",
    "How much does the Starter plan cost?",
    "Which team maintains the service Kite depends on?",
    "How do I reset my VPN token?",
];
const TEXT: &str = "The Pro plan costs €39 per month. Kite depends on Ledger.";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("services/ontoloop is two levels down")
        .to_path_buf()
}

/// The project environment's Python, which must hold what this test imports.
fn python(root: &Path) -> PathBuf {
    ontoloop_testkit::python::venv_python(root, "mcp", "scripts/python-env.sh")
}

fn system_env(dir: &Path) -> Vec<(String, String)> {
    let mut env = vec![(
        "ONTOLOOP__STORE__URL".to_owned(),
        format!("sqlite://{}/data/ontoloop.db?mode=rwc", dir.display()),
    )];
    env.extend(ports_env());
    for (key, value) in [
        ("ONTOLOOP__AUTH__MODE", "jwt"),
        ("ONTOLOOP__AUTH__HS256_SECRET", SECRET),
        ("ONTOLOOP__AUTH__ISSUER", "https://issuer.test"),
        ("ONTOLOOP__AUTH__AUDIENCE", "ontoloop"),
    ] {
        env.push((key.to_owned(), value.to_owned()));
    }
    env
}

fn run(env: &[(String, String)], args: &[&str], token: Option<&str>) -> String {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .envs(env.iter().cloned())
        .env_remove("ONTOLOOP_TOKEN");
    if let Some(token) = token {
        command.env("ONTOLOOP_TOKEN", token);
    }
    let output = command.output().expect("run ontoloop");
    assert!(
        output.status.success(),
        "ontoloop {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn token(env: &[(String, String)], principal: &str, roles: &str) -> String {
    run(
        env,
        &[
            "token",
            "issue",
            "--tenant",
            TENANT,
            "--principal",
            principal,
            "--role",
            roles,
        ],
        None,
    )
    .trim()
    .to_owned()
}

fn port(env: &[(String, String)], service: &str) -> u16 {
    let key = format!("ONTOLOOP__SERVICES__{service}_PORT");
    env.iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
        .expect("a port for every service")
}

/// Runs the Python client with `plan`; what it printed.
fn mcp_client(python: &Path, root: &Path, plan: &Value) -> Value {
    let mut child = Command::new(python)
        .arg(root.join("tests/python/mcp_client.py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(plan.to_string().as_bytes())
        .expect("write the plan");
    let output = child.wait_with_output().expect("the Python client ends");
    assert!(
        output.status.success(),
        "mcp_client.py failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "mcp_client.py printed no JSON ({err}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// The search both APIs make.
const SEARCH: &str = "Which team maintains Ledger?";

/// The plan's calls: every question, both validations, then `cite` of `passage`, then a search.
fn calls(passage: &v1::Passage) -> Value {
    let mut calls: Vec<Value> = QUESTIONS
        .iter()
        .map(|q| json!({"tool": "ask", "arguments": {"question": q}}))
        .collect();
    calls.push(json!({"tool": "validate", "arguments": {"text": TEXT}}));
    calls.push(json!({"tool": "validate", "arguments": {"claims": [
        {"subject": "Pro plan", "predicate": "price", "object": "49"}]}}));
    calls.push(json!({"tool": "cite", "arguments": {
        "source_id": passage.source_id, "source_version": passage.source_version,
        "chunk_hash": passage.chunk_hash, "start": passage.start, "end": passage.end}}));
    calls.push(
        json!({"tool": "search", "arguments": {"query": SEARCH, "origins": ["wiki"], "k": 3}}),
    );
    Value::Array(calls)
}

fn evidence(e: &v1::Evidence) -> Value {
    json!([
        e.source_id,
        e.source_version,
        e.origin,
        e.authority,
        e.value,
        e.excerpt,
        e.extractor
    ])
}

fn mcp_evidence(e: &Value) -> Value {
    json!([
        e["source_id"],
        e["source_version"],
        e["origin"],
        e["authority"],
        e["value"],
        e["excerpt"],
        e["extractor"]
    ])
}

/// What the gRPC answer and the MCP answer must share, each as one comparable value.
fn answer_fields(a: &v1::Answer) -> Value {
    let status = v1::AnswerStatus::try_from(a.status).expect("a known status");
    json!({
        "status": status.as_str_name(),
        "value": a.value,
        "values": a.values,
        "hedges": a.hedges.iter().map(|h| json!([h.code, h.message, h.source_id])).collect::<Vec<_>>(),
        "hops": a.hops.iter().map(|h| json!([h.entity, h.predicate, h.value,
            h.evidence.iter().map(evidence).collect::<Vec<_>>()])).collect::<Vec<_>>(),
        "evidence": a.evidence.iter().map(evidence).collect::<Vec<_>>(),
        "entity": a.entity,
        "predicate_path": a.predicate_path,
        "passages": a.passages.iter().map(passage).collect::<Vec<_>>(),
    })
}

fn passage(p: &v1::Passage) -> Value {
    json!([
        p.source_id,
        p.source_version,
        p.title,
        p.headings,
        p.text,
        p.chunk_hash,
        p.start,
        p.end
    ])
}

fn mcp_passage(p: &Value) -> Value {
    json!([
        p["source_id"],
        p["source_version"],
        p["title"],
        p["headings"],
        p["text"],
        p["chunk_hash"],
        p["start"],
        p["end"]
    ])
}

fn mcp_answer_fields(a: &Value) -> Value {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    json!({
        "status": a["status"],
        "value": a["value"],
        "values": a["values"],
        "hedges": list(&a["hedges"]).iter().map(|h| json!([h["code"], h["message"], h["source_id"]])).collect::<Vec<_>>(),
        "hops": list(&a["hops"]).iter().map(|h| json!([h["entity"], h["predicate"], h["value"],
            list(&h["evidence"]).iter().map(mcp_evidence).collect::<Vec<_>>()])).collect::<Vec<_>>(),
        "evidence": list(&a["evidence"]).iter().map(mcp_evidence).collect::<Vec<_>>(),
        "entity": a["entity"],
        "predicate_path": a["predicate_path"],
        "passages": list(&a["passages"]).iter().map(mcp_passage).collect::<Vec<_>>(),
    })
}

fn validation_fields(r: &v1::ValidateResponse) -> Value {
    let verdict = |v: i32| {
        v1::Verdict::try_from(v)
            .expect("a known verdict")
            .as_str_name()
    };
    json!({
        "overall": verdict(r.overall),
        "verdicts": r.verdicts.iter().map(|v| json!([
            v.claim.as_ref().map(|c| json!([c.subject, c.predicate, c.object])),
            verdict(v.verdict),
            v.reasons.iter().map(|r| json!([r.code, r.message])).collect::<Vec<_>>(),
            v.sentence,
        ])).collect::<Vec<_>>(),
    })
}

fn mcp_validation_fields(r: &Value) -> Value {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    json!({
        "overall": r["overall"],
        "verdicts": list(&r["verdicts"]).iter().map(|v| json!([
            if v["claim"].is_null() { Value::Null } else { json!([v["claim"]["subject"], v["claim"]["predicate"], v["claim"]["object"]]) },
            v["verdict"],
            list(&v["reasons"]).iter().map(|r| json!([r["code"], r["message"]])).collect::<Vec<_>>(),
            v["sentence"],
        ])).collect::<Vec<_>>(),
    })
}

/// What the gRPC API gave for the plan's calls.
struct Grpc {
    answers: Vec<v1::Answer>,
    validations: Vec<v1::ValidateResponse>,
    citation: v1::CitationResolution,
    found: v1::SearchResponse,
}

/// Asserts what one transport's client got: eight described tools with schemas, and every call
/// answered as the gRPC API answered it.
fn assert_matches(transport: &str, got: &Value, grpc: &Grpc) {
    let (answers, validations, citation) = (&grpc.answers, &grpc.validations, &grpc.citation);
    let tools = got["tools"].as_array().expect("tools listed");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "ask",
            "cite",
            "lookup",
            "patterns",
            "plate",
            "report_signal",
            "search",
            "validate"
        ],
        "{transport}"
    );
    for tool in tools {
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 40),
            "{transport}: {tool}"
        );
        assert_eq!(
            tool["input_schema"]["type"], "object",
            "{transport}: {tool}"
        );
        assert_eq!(
            tool["output_schema"]["type"], "object",
            "{transport}: {tool}"
        );
    }
    let ask = tools
        .iter()
        .find(|t| t["name"] == "ask")
        .expect("ask listed");
    assert_eq!(
        ask["input_schema"]["required"],
        json!(["question"]),
        "{transport}: {ask}"
    );
    assert!(
        ask["output_schema"]["properties"]["hedges"].is_object(),
        "{transport}: {ask}"
    );

    let results = got["results"].as_array().expect("results");
    assert_eq!(
        results.len(),
        answers.len() + validations.len() + 2,
        "{transport}"
    );
    for (result, answer) in results.iter().zip(answers) {
        assert_eq!(result["is_error"], false, "{transport}: {result}");
        assert_eq!(
            mcp_answer_fields(&result["structured"]),
            answer_fields(answer),
            "{transport}: the MCP answer is the gRPC answer"
        );
        let text = result["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(&answer.value), "{transport}: {text}");
    }
    for (result, validation) in results[answers.len()..].iter().zip(validations) {
        assert_eq!(result["is_error"], false, "{transport}: {result}");
        assert_eq!(
            mcp_validation_fields(&result["structured"]),
            validation_fields(validation),
            "{transport}: the MCP verdicts are the gRPC verdicts"
        );
    }
    let cited = &results[answers.len() + validations.len()];
    assert_eq!(cited["is_error"], false, "{transport}: {cited}");
    let status = v1::CitationStatus::try_from(citation.status).expect("a known status");
    assert_eq!(
        cited["structured"]["status"],
        status
            .as_str_name()
            .trim_start_matches("CITATION_STATUS_")
            .to_lowercase(),
        "{transport}: {cited}"
    );
    assert_eq!(
        mcp_passage(&cited["structured"]["passage"]),
        passage(citation.passage.as_ref().expect("a current passage")),
        "{transport}: the MCP citation is the gRPC citation"
    );
    let searched = &results[answers.len() + validations.len() + 1];
    assert_eq!(searched["is_error"], false, "{transport}: {searched}");
    let hits = searched["structured"]["hits"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mcp_hits: Vec<Value> = hits
        .iter()
        .map(|h| json!([mcp_passage(&h["passage"]), h["entities"]]))
        .collect();
    let grpc_hits: Vec<Value> = grpc
        .found
        .hits
        .iter()
        .map(|h| {
            let entities: Vec<Value> = h
                .entities
                .iter()
                .map(|e| json!({"id": e.id, "name": e.name, "entity_type": e.entity_type}))
                .collect();
            json!([passage(h.passage.as_ref().expect("a passage")), entities])
        })
        .collect();
    assert_eq!(
        mcp_hits, grpc_hits,
        "{transport}: the MCP search is the gRPC search"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_sdk_gets_the_grpc_answers_over_stdio_and_http() {
    let root = repo_root();
    let python = python(&root);
    let dir = tempfile::tempdir().expect("temp dir");
    let env = system_env(dir.path());
    let mut up = Command::new(BIN);
    up.arg("up")
        .current_dir(dir.path())
        .envs(env.iter().cloned())
        .env_remove("RUST_LOG")
        .env_remove("ONTOLOOP_TOKEN");
    let Up { child: mut up, .. } = Up::start(up);

    let admin = token(&env, "loader", "admin");
    let agent = token(&env, "mcp-agent", "agent,integration");
    let world = dir.path().join("world.json");
    std::fs::write(&world, WORLD).expect("write the world");
    let pushed = run(
        &env,
        &[
            "ingest",
            &world.display().to_string(),
            "--as",
            &format!("{TENANT}/loader"),
        ],
        Some(&admin),
    );
    let last: u64 = pushed
        .split("--min-sequence ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("ingest names the last sequence number: {pushed}"));

    // The gRPC API's answers for the agent.
    let settings = ontoloop_settings::Loader::new()
        .load()
        .expect("default settings");
    let addrs: Vec<(ServiceKind, SocketAddr)> = [
        (ServiceKind::Retrieval, "RETRIEVAL"),
        (ServiceKind::Firewall, "FIREWALL"),
        (ServiceKind::Telemetry, "TELEMETRY"),
        (ServiceKind::Analyst, "ANALYST"),
    ]
    .into_iter()
    .map(|(kind, name)| (kind, SocketAddr::from(([127, 0, 0, 1], port(&env, name)))))
    .collect();
    let clients = Clients::from_addrs_with(
        &addrs,
        &settings.tls,
        Bearer::new(&agent).expect("a bearer"),
    )
    .await
    .expect("dial the services");
    let mut answers = Vec::new();
    for question in QUESTIONS {
        let answer = clients
            .retrieval
            .clone()
            .ask(v1::AskRequest {
                text: question.into(),
                min_sequence: last,
                ..Default::default()
            })
            .await
            .expect("ask over gRPC")
            .into_inner();
        answers.push(answer);
    }
    // The world answers as the test means: a plain answer, a hedged one, two hops.
    assert_eq!(answers[0].value, "49", "{:?}", answers[0]);
    assert!(
        answers[1]
            .hedges
            .iter()
            .any(|h| h.code == "low_authority_only"),
        "{:?}",
        answers[1]
    );
    assert_eq!(answers[2].hops.len(), 2, "{:?}", answers[2]);
    assert_eq!(
        answers[3].status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{:?}",
        answers[3]
    );
    let cited = answers[3].passages.first().expect("a passage").clone();
    let citation = clients
        .retrieval
        .clone()
        .resolve_citation(v1::ResolveCitationRequest {
            source_id: cited.source_id.clone(),
            source_version: cited.source_version,
            chunk_hash: cited.chunk_hash.clone(),
            start: cited.start,
            end: cited.end,
            ..Default::default()
        })
        .await
        .expect("resolve over gRPC")
        .into_inner();
    assert_eq!(
        citation.status,
        v1::CitationStatus::Current as i32,
        "{citation:?}"
    );
    // A search kept to the wiki: the architecture page, naming Ledger and the Payments team.
    let found = clients
        .retrieval
        .clone()
        .search(v1::SearchRequest {
            query: SEARCH.into(),
            origins: vec!["wiki".into()],
            k: 3,
            ..Default::default()
        })
        .await
        .expect("search over gRPC")
        .into_inner();
    let first = found.hits.first().and_then(|h| h.passage.as_ref());
    assert_eq!(
        first.map(|p| p.source_id.as_str()),
        Some("architecture"),
        "{found:?}"
    );
    assert!(
        found.hits[0].entities.iter().any(|e| e.name == "Ledger"),
        "{found:?}"
    );
    assert!(
        found
            .hits
            .iter()
            .filter_map(|h| h.passage.as_ref())
            .all(|p| p.origin == "wiki"),
        "{found:?}"
    );
    let mut validations = Vec::new();
    for input in [
        v1::validate_request::Input::Text(TEXT.into()),
        v1::validate_request::Input::Claims(v1::ClaimList {
            claims: vec![v1::Claim {
                subject: "Pro plan".into(),
                predicate: "price".into(),
                object: "49".into(),
                chain: Vec::new(),
                scope: String::new(),
            }],
        }),
    ] {
        let response = clients
            .firewall
            .clone()
            .validate(v1::ValidateRequest {
                input: Some(input),
                context: Some(v1::ValidationContext::default()),
                ..Default::default()
            })
            .await
            .expect("validate over gRPC")
            .into_inner();
        validations.push(response);
    }
    assert_eq!(
        validations[0].overall,
        v1::Verdict::Block as i32,
        "{:?}",
        validations[0]
    );
    assert_eq!(
        validations[1].overall,
        v1::Verdict::Pass as i32,
        "{:?}",
        validations[1]
    );

    // Over stdio: the Python SDK starts `ontoloop mcp` with the agent's token.
    let mut server_env: serde_json::Map<String, Value> = env
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.clone())))
        .collect();
    server_env.insert("ONTOLOOP_TOKEN".into(), agent.clone().into());
    let python_c = python.clone();
    let root_c = root.clone();
    let cited_c = cited.clone();
    let stdio = tokio::task::spawn_blocking(move || {
        mcp_client(
            &python_c,
            &root_c,
            &json!({"transport": "stdio", "command": BIN, "args": ["mcp"], "env": server_env, "calls": calls(&cited_c)}),
        )
    })
    .await
    .expect("the stdio client finishes");
    let grpc = Grpc {
        answers,
        validations,
        citation,
        found,
    };
    assert_matches("stdio", &stdio, &grpc);

    // Over HTTP: one server, each request's Authorization header its caller.
    let mut http = Command::new(BIN)
        .args(["mcp", "--http", "0"])
        .current_dir(dir.path())
        .envs(env.iter().cloned())
        .env_remove("ONTOLOOP_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ontoloop mcp --http");
    let stderr = http.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let url = loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => {
                if let Some(url) = line.strip_prefix("mcp ") {
                    break url.trim().to_owned();
                }
            }
            Err(err) => {
                let _ = http.kill();
                panic!("ontoloop mcp --http never printed its address: {err}");
            }
        }
    };
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "loopback by default: {url}"
    );
    let (python_c, root_c, url_c, agent_c, cited_c) = (
        python.clone(),
        root.clone(),
        url.clone(),
        agent.clone(),
        cited.clone(),
    );
    let with_token = tokio::task::spawn_blocking(move || {
        mcp_client(
            &python_c,
            &root_c,
            &json!({"transport": "http", "url": url_c, "token": agent_c, "calls": calls(&cited_c)}),
        )
    })
    .await
    .expect("the HTTP client finishes");
    // Without a token the same server has no caller to pass on: the services refuse the call;
    // and a caller named in the arguments is refused as an unknown argument.
    let (python_c, root_c, url_c) = (python.clone(), root.clone(), url.clone());
    let without = tokio::task::spawn_blocking(move || {
        mcp_client(
            &python_c,
            &root_c,
            &json!({"transport": "http", "url": url_c, "calls": [
                {"tool": "ask", "arguments": {"question": QUESTIONS[0]}},
                {"tool": "ask", "arguments": {"question": QUESTIONS[0],
                    "caller": {"tenant": TENANT, "principal": "mcp-agent"}}},
            ]}),
        )
    })
    .await
    .expect("the HTTP client finishes");
    let _ = http.kill();
    let _ = http.wait();
    let _ = up.kill();
    let _ = up.wait();

    assert_matches("http", &with_token, &grpc);
    let refused = &without["results"][0];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(
        refused["text"]
            .as_str()
            .is_some_and(|t| t.contains("Unauthenticated")),
        "{refused}"
    );
    let named = &without["results"][1];
    assert_eq!(named["is_error"], true, "{named}");
    assert!(
        named["text"]
            .as_str()
            .is_some_and(|t| t.contains("unknown field `caller`")),
        "{named}"
    );
}
