//! `ontoloop ingest PATH` end to end: the CLI (the binary `cargo build --workspace --bins`
//! built) pushes into the embedded system a folder of every format, a git repository's history
//! and a folder it watches. A question is answered from each format (passages, and a fact from
//! a Markdown page), files it cannot read are listed with the reason, a re-run pushes only what
//! changed, a deleted file's page leaves the answers, a question as of an old commit is answered
//! from that commit, and an edit made while watching is in an answer within 2 s.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::{Clients, Sandbox, caller, ontology, wait_until};
use serde_json::Value;

const TENANT: &str = "acme";

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]}],
  "authority":{"docs":2,"default":1}}"#;

/// The exit code of a run that could not read every file.
const SOME_FILES_FAILED: i32 = 2;

/// The `ontoloop` binary beside this test's executable; panics, saying how to build it, when it
/// is missing.
fn bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable's folder");
    let dir = if deps.ends_with("deps") {
        deps.parent().expect("target/debug")
    } else {
        deps
    };
    let path = dir.join("ontoloop");
    assert!(
        path.is_file(),
        "{} is missing: `cargo test` does not build it for this crate; run \
         `cargo build --workspace --bins` first (`make test` does)",
        path.display()
    );
    path
}

/// The CLI run in `cwd` (where it finds no dev-auth secret) with the sandbox's ports and
/// nothing from the caller's shell.
fn cli(sandbox: &Sandbox, cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(bin());
    command
        .args(args)
        .env_remove("ONTOLOOP_TOKEN")
        .env_remove("ONTOLOOP_CONFIG")
        .env_remove("RUST_LOG")
        .current_dir(cwd);
    for kind in [
        ServiceKind::Retrieval,
        ServiceKind::Firewall,
        ServiceKind::Telemetry,
        ServiceKind::Analyst,
    ] {
        command.env(
            format!(
                "ONTOLOOP__SERVICES__{}_PORT",
                kind.name().to_ascii_uppercase()
            ),
            sandbox.addr(kind).port().to_string(),
        );
    }
    command
}

/// `ontoloop ingest PATH --as acme/ingest --json ARGS...`, run beside PATH: the exit code and
/// the summary.
async fn ingest(sandbox: &Sandbox, path: &Path, args: &[&str]) -> (i32, Value) {
    let shown = path.display().to_string();
    let mut all = vec!["ingest", shown.as_str(), "--as", "acme/ingest", "--json"];
    all.extend_from_slice(args);
    let cwd = path.parent().unwrap_or(path);
    let mut command = cli(sandbox, cwd, &all);
    let out: Output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("run ontoloop ingest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "ingest prints a JSON summary ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), summary)
}

/// The sandbox with the ontology set.
async fn system() -> (Sandbox, Clients) {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    c.push(TENANT, "ops", ontology(ONTOLOGY))
        .await
        .expect("ontology");
    (sandbox, c)
}

/// The passages answering `text` once `after` is applied, as of `as_of` (RFC 3339) or now.
async fn passages(c: &Clients, text: &str, after: u64, as_of: Option<&str>) -> Vec<v1::Passage> {
    let as_of = as_of.map(|t| {
        ontoloop_proto::convert::timestamp(
            chrono::DateTime::parse_from_rfc3339(t)
                .expect("RFC 3339")
                .with_timezone(&chrono::Utc),
        )
    });
    c.retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(TENANT, "alice"),
            text: text.into(),
            min_sequence: after,
            as_of,
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner()
        .passages
}

/// The passage of page `id` among those answering `text`, if any.
async fn passage_of(
    c: &Clients,
    text: &str,
    id: &str,
    after: u64,
    as_of: Option<&str>,
) -> Option<v1::Passage> {
    passages(c, text, after, as_of)
        .await
        .into_iter()
        .find(|p| p.source_id == id)
}

/// The Pro plan's price as of `as_of` (RFC 3339) or now, with the page it came from.
async fn price(c: &Clients, after: u64, as_of: Option<&str>) -> (String, String) {
    let as_of = as_of.map(|t| {
        ontoloop_proto::convert::timestamp(
            chrono::DateTime::parse_from_rfc3339(t)
                .expect("RFC 3339")
                .with_timezone(&chrono::Utc),
        )
    });
    let answer = c
        .retrieval
        .clone()
        .lookup(v1::LookupRequest {
            caller: caller(TENANT, "alice"),
            entity: "Pro".into(),
            predicate_path: vec!["price".into()],
            min_sequence: after,
            as_of,
            ..Default::default()
        })
        .await
        .expect("lookup")
        .into_inner();
    let source = answer
        .evidence
        .first()
        .map(|e| format!("{}@{}", e.source_id, e.source_version))
        .unwrap_or_default();
    (answer.value, source)
}

fn sequence(summary: &Value) -> u64 {
    summary["last_sequence"].as_u64().expect("last_sequence")
}

fn write(path: &Path, content: impl AsRef<[u8]>) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the folder");
    }
    std::fs::write(path, content).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_of_every_format_is_answered_and_a_deleted_file_leaves_the_answers() {
    let (sandbox, c) = system().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    write(
        &docs.join("handbook/vpn.md"),
        "# Remote access\n\nTo reset a VPN token, open the Keystone portal and choose Renew.\n",
    );
    write(
        &docs.join("handbook/pricing.md"),
        "# Pricing\n\nThe Pro plan costs €49 per month.\n",
    );
    write(
        &docs.join("ops/oncall.rst"),
        "On-call\n=======\n\nThe pager rotation hands over every Tuesday at nine.\n",
    );
    write(
        &docs.join("services/ledger.yaml"),
        "name: Ledger\nowner: payments\narchive_region: frankfurt\n",
    );
    write(
        &docs.join("guides/travel.html"),
        "<html><head><title>Travel policy</title><style>p { color: red }</style></head>\
         <body><h1>Travel</h1><p>Book trains &amp; flights two weeks ahead through Wanderly.</p>\
         <script>var secret = 'zebra';</script></body></html>",
    );
    write(
        &docs.join("reports/q3.pdf"),
        ontoloop_testkit::pdf::tiny(
            "Audit report",
            &[&["The quarterly audit found seventeen open findings."]],
        ),
    );
    // What it cannot or must not read: each is listed with the reason, or counted.
    write(&docs.join("broken.md"), b"# Broken\0\x01\x02");
    write(&docs.join("big.txt"), "word ".repeat(2000));
    write(&docs.join("logo.png"), b"\x89PNG");
    write(
        &dir.path().join("secret.md"),
        "# Secret\n\nThe vault code is 1234.\n",
    );
    std::os::unix::fs::symlink(dir.path().join("secret.md"), docs.join("outside.md"))
        .expect("symlink");

    let (code, summary) = ingest(&sandbox, &docs, &["--max-file-bytes", "4096"]).await;
    assert_eq!(code, SOME_FILES_FAILED, "{summary}");
    assert_eq!(
        (
            &summary["pushed"],
            &summary["unchanged"],
            &summary["deleted"]
        ),
        (&Value::from(6), &Value::from(0), &Value::from(0)),
        "{summary}"
    );
    let reason = |path: &str| {
        summary["failed"]
            .as_array()
            .expect("failed")
            .iter()
            .find(|f| f["path"] == path)
            .and_then(|f| f["reason"].as_str())
            .unwrap_or_else(|| panic!("{path} is listed as not read: {summary}"))
            .to_owned()
    };
    assert!(reason("broken.md").starts_with("binary"));
    assert!(reason("big.txt").contains("--max-file-bytes"));
    assert!(reason("outside.md").contains("out of the folder"));
    assert_eq!(summary["failed"].as_array().map(Vec::len), Some(3));
    assert_eq!(summary["other_formats"][".png"], 1);
    assert!(summary["applied_seconds"].is_f64(), "{summary}");
    let seq = sequence(&summary);

    // A question answered from each format, by the page of that file.
    let asked = [
        (
            "How do I reset a VPN token?",
            "handbook/vpn.md",
            "Keystone portal",
        ),
        (
            "When does the pager rotation hand over?",
            "ops/oncall.rst",
            "every Tuesday",
        ),
        (
            "Which archive region does Ledger use?",
            "services/ledger.yaml",
            "frankfurt",
        ),
        (
            "How far ahead should I book trains?",
            "guides/travel.html",
            "Book trains & flights two weeks ahead through Wanderly.",
        ),
        (
            "How many open findings did the quarterly audit find?",
            "reports/q3.pdf",
            "seventeen open findings",
        ),
    ];
    for (question, id, says) in asked {
        let passage = passage_of(&c, question, id, seq, None)
            .await
            .unwrap_or_else(|| panic!("{question:?} is answered from {id}"));
        assert!(passage.text.contains(says), "{id}: {:?}", passage.text);
        assert_eq!(passage.origin, "docs");
    }
    let html = passage_of(
        &c,
        "How far ahead should I book trains?",
        "guides/travel.html",
        seq,
        None,
    )
    .await
    .expect("the HTML page");
    assert_eq!(html.title, "Travel policy");
    assert!(!html.text.contains('<') && !html.text.contains("zebra"));
    let pdf = passage_of(&c, "quarterly audit findings", "reports/q3.pdf", seq, None)
        .await
        .expect("the PDF");
    assert_eq!(pdf.title, "Audit report");
    // A fact from a Markdown page, through the ontology's pattern.
    assert_eq!(
        price(&c, seq, None).await,
        ("49".to_owned(), "handbook/pricing.md@1".to_owned())
    );
    // Nothing outside the folder got in.
    assert!(
        passages(&c, "What is the vault code?", seq, None)
            .await
            .iter()
            .all(|p| !p.text.contains("1234"))
    );

    // A re-run pushes nothing unchanged; an edit pushes that page alone.
    let (_, again) = ingest(&sandbox, &docs, &["--max-file-bytes", "4096"]).await;
    assert_eq!(
        (&again["pushed"], &again["unchanged"]),
        (&Value::from(0), &Value::from(6)),
        "{again}"
    );
    write(
        &docs.join("handbook/pricing.md"),
        "# Pricing\n\nThe Pro plan costs €59 per month.\n",
    );
    let (_, edited) = ingest(&sandbox, &docs, &["--max-file-bytes", "4096"]).await;
    assert_eq!(
        (&edited["pushed"], &edited["unchanged"]),
        (&Value::from(1), &Value::from(5)),
        "{edited}"
    );
    assert_eq!(
        price(&c, sequence(&edited), None).await,
        ("59".to_owned(), "handbook/pricing.md@2".to_owned())
    );

    // A deleted file's page leaves the answers (the folder's listing of its origin).
    std::fs::remove_file(docs.join("handbook/vpn.md")).expect("delete");
    let (_, deleted) = ingest(&sandbox, &docs, &["--max-file-bytes", "4096"]).await;
    assert_eq!(deleted["deleted"], 1, "{deleted}");
    assert_eq!(deleted["listings"], 1, "{deleted}");
    assert!(
        passage_of(
            &c,
            "How do I reset a VPN token?",
            "handbook/vpn.md",
            sequence(&deleted),
            None
        )
        .await
        .is_none(),
        "the deleted page still answers"
    );
    assert!(
        passage_of(
            &c,
            "When does the pager rotation hand over?",
            "ops/oncall.rst",
            sequence(&deleted),
            None
        )
        .await
        .is_some(),
        "the other pages stay"
    );

    // The store, not the state file, says what is pushed: without the state file a re-run reads
    // every file again, compares it with what the store holds, and pushes only the edit.
    std::fs::remove_dir_all(docs.join(".ontoloop")).expect("drop the state file");
    write(
        &docs.join("handbook/pricing.md"),
        "# Pricing\n\nThe Pro plan costs €69 per month.\n",
    );
    let (_, relisted) = ingest(&sandbox, &docs, &["--max-file-bytes", "4096"]).await;
    assert_eq!(
        (
            &relisted["pushed"],
            &relisted["unchanged"],
            &relisted["deleted"],
            &relisted["compared_with"]
        ),
        (
            &Value::from(1),
            &Value::from(4),
            &Value::from(0),
            &Value::from("store")
        ),
        "{relisted}"
    );
    assert_eq!(
        price(&c, sequence(&relisted), None).await,
        ("69".to_owned(), "handbook/pricing.md@3".to_owned())
    );
    sandbox.shutdown().await.expect("shutdown");
}

/// `git` in `repo` with a fixed identity and no user or system configuration.
fn git(repo: &Path, args: &[&str], date: Option<&str>) {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=Ingest Test",
            "-c",
            "user.email=ingest@example.com",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    if let Some(date) = date {
        command
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date);
    }
    let out = command.output().expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn commit(repo: &Path, date: &str, message: &str) {
    git(repo, &["add", "-A"], None);
    git(repo, &["commit", "-q", "-m", message], Some(date));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_history_answers_as_of_an_old_commit() {
    let (sandbox, c) = system().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"], None);
    let policy =
        |days: u32| format!("# Refunds\n\nRefunds are accepted within {days} days of purchase.\n");
    let pricing = |euros: u32| format!("# Pricing\n\nThe Pro plan costs €{euros} per month.\n");
    write(&repo.join("policy.md"), policy(14));
    write(&repo.join("pricing.md"), pricing(49));
    write(
        &repo.join("readme.md"),
        "# Readme\n\nThe mascot is a heron.\n",
    );
    commit(&repo, "2024-01-10T10:00:00Z", "first");
    write(&repo.join("policy.md"), policy(30));
    write(&repo.join("pricing.md"), pricing(59));
    commit(&repo, "2024-04-02T10:00:00Z", "second");
    std::fs::remove_file(repo.join("readme.md")).expect("delete");
    write(
        &repo.join("faq.yaml"),
        "question: Do you ship abroad?\nanswer: yes\n",
    );
    commit(&repo, "2024-07-15T10:00:00Z", "third");

    let (code, summary) = ingest(&sandbox, &repo, &["--git"]).await;
    assert_eq!(code, 0, "{summary}");
    assert_eq!(
        (&summary["commits"], &summary["pushed"], &summary["deleted"]),
        (&Value::from(3), &Value::from(6), &Value::from(1)),
        "{summary}"
    );
    let seq = sequence(&summary);

    // As of an old commit: what the page said then; now: what it says now.
    let refunds = "Within how many days are refunds accepted?";
    let then = passage_of(&c, refunds, "policy.md", seq, Some("2024-02-01T00:00:00Z"))
        .await
        .expect("the policy as of February");
    assert!(then.text.contains("14 days"), "{:?}", then.text);
    assert_eq!(then.source_version, 1);
    let now = passage_of(&c, refunds, "policy.md", seq, None)
        .await
        .expect("the policy now");
    assert!(now.text.contains("30 days"), "{:?}", now.text);
    assert_eq!(
        price(&c, seq, Some("2024-02-01T00:00:00Z")).await,
        ("49".to_owned(), "pricing.md@1".to_owned())
    );
    assert_eq!(
        price(&c, seq, Some("2024-05-01T00:00:00Z")).await,
        ("59".to_owned(), "pricing.md@2".to_owned())
    );
    // A file the history deleted answered before its deletion, not after.
    let mascot = "What is the mascot?";
    assert!(
        passage_of(&c, mascot, "readme.md", seq, Some("2024-02-01T00:00:00Z"))
            .await
            .is_some()
    );
    assert!(
        passage_of(&c, mascot, "readme.md", seq, None)
            .await
            .is_none()
    );

    // A re-run pushes only the commits after the last one pushed.
    let (_, same) = ingest(&sandbox, &repo, &["--git"]).await;
    assert_eq!(
        (&same["commits"], &same["pushed"]),
        (&Value::from(0), &Value::from(0)),
        "{same}"
    );
    write(&repo.join("pricing.md"), pricing(64));
    commit(&repo, "2024-09-01T10:00:00Z", "fourth");
    let (_, next) = ingest(&sandbox, &repo, &["--git"]).await;
    assert_eq!(
        (&next["commits"], &next["pushed"]),
        (&Value::from(1), &Value::from(1)),
        "{next}"
    );
    assert_eq!(
        price(&c, sequence(&next), None).await,
        ("64".to_owned(), "pricing.md@3".to_owned())
    );

    // Without the state file naming the last commit pushed, the history is not pushed again on
    // top of what the store holds (old texts as new versions): the run refuses, saying why.
    std::fs::remove_dir_all(repo.join(".ontoloop")).expect("drop the state file");
    let shown = repo.display().to_string();
    let args = [
        "ingest",
        shown.as_str(),
        "--as",
        "acme/ingest",
        "--json",
        "--git",
    ];
    let mut command = cli(&sandbox, repo.parent().unwrap_or(&repo), &args);
    let out: Output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("run ontoloop ingest");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("names no last commit pushed"), "{stderr}");
    assert_eq!(
        price(&c, sequence(&next), None).await,
        ("64".to_owned(), "pricing.md@3".to_owned())
    );
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_to_a_watched_folder_is_answered_within_two_seconds() {
    let (sandbox, c) = system().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    let vpn = docs.join("vpn.md");
    write(
        &vpn,
        "# Remote access\n\nTo reset a VPN token, open the Keystone portal and choose Renew.\n",
    );
    let path = docs.display().to_string();
    let mut child = cli(
        &sandbox,
        dir.path(),
        &["ingest", &path, "--as", "acme/ingest", "--watch"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("start ontoloop ingest --watch");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut printed = Vec::new();
    while !printed.iter().any(|l: &String| l.starts_with("watching ")) {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => printed.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("ingest --watch never said it was watching: {printed:?}");
            }
        }
    }

    write(
        &vpn,
        "# Remote access\n\nTo reset a VPN token, open the Lighthouse portal and choose Renew.\n",
    );
    let edited = Instant::now();
    let seen = wait_until(Duration::from_secs(2), || {
        let c = c.clone();
        async move {
            passage_of(&c, "How do I reset a VPN token?", "vpn.md", 0, None)
                .await
                .is_some_and(|p| p.text.contains("Lighthouse"))
        }
    })
    .await;
    let took = edited.elapsed();
    eprintln!("an edit under --watch was answered {took:?} after the write");

    let stopped = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("send SIGTERM");
    assert!(stopped.success());
    let exit = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(seen, "the edit was not answered within 2 s");
    assert!(
        exit.success(),
        "ingest --watch ends cleanly on SIGTERM: {exit:?}"
    );
    let rest: Vec<String> = lines.try_iter().collect();
    assert!(
        rest.iter()
            .any(|l| l.starts_with("pushed 1") && l.contains("vpn.md")),
        "{rest:?}"
    );
    sandbox.shutdown().await.expect("shutdown");
}
