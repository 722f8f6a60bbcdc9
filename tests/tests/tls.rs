//! TLS and mTLS on the four gRPC servers, black box: a CA, a server certificate for
//! `localhost` / 127.0.0.1 and a client certificate are made here (rcgen), the system is served
//! as `ontoloop up` serves it with `[tls]` settings, and dialled as the CLI dials it. A client
//! trusting the CA is served (health of all four, Lookup and Ask); a plaintext client and a
//! client trusting another CA are not. With `tls.client_ca_file` (mTLS) a client without a
//! certificate, or with one another CA signed, is refused, and the CA-signed one is served. A
//! certificate file that cannot be read stops the services with an error naming its setting.

use std::path::Path;
use std::time::Duration;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_tests::pki::Pki;
use ontoloop_tests::{Sandbox, caller, doc, ontology, settings};
use tonic::Code;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint, Identity};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

const TENANT: &str = "acme";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"project","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"wiki":2,"default":1}}"#;

async fn start(overrides: &[(&'static str, String)]) -> Sandbox {
    let overrides: Vec<(&str, &str)> = overrides.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Sandbox::embedded(&overrides).await
}

/// A retrieval client over `https://` with `tls`, or plaintext `http://` without.
fn retrieval(sandbox: &Sandbox, tls: Option<ClientTlsConfig>) -> RetrievalServiceClient<Channel> {
    let addr = sandbox.addr(ServiceKind::Retrieval);
    let endpoint = match tls {
        Some(tls) => Endpoint::from_shared(format!("https://{addr}"))
            .expect("an endpoint")
            .tls_config(tls)
            .expect("a TLS config"),
        None => Endpoint::from_shared(format!("http://{addr}")).expect("an endpoint"),
    };
    RetrievalServiceClient::new(
        endpoint
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .connect_lazy(),
    )
}

fn lookup(min_sequence: u64) -> v1::LookupRequest {
    v1::LookupRequest {
        caller: caller(TENANT, "alice"),
        entity: "Project Kite".into(),
        predicate_path: vec!["owned_by".into()],
        min_sequence,
        ..Default::default()
    }
}

/// Loads one fact through the sandbox's own (TLS) clients; the sequence to wait for.
async fn load(sandbox: &Sandbox) -> u64 {
    sandbox
        .clients()
        .push_all(
            TENANT,
            "integration",
            [
                ontology(ONTOLOGY),
                doc(
                    "kite",
                    "wiki",
                    "Project Kite is owned by the Atlas team.",
                    &[],
                    0.0,
                ),
            ],
        )
        .await
}

async fn assert_all_serving(sandbox: &Sandbox) {
    for kind in ServiceKind::ALL {
        let status = HealthClient::new(sandbox.channel(kind))
            .check(HealthCheckRequest {
                service: kind.grpc_name().into(),
            })
            .await
            .unwrap_or_else(|err| panic!("{} answers health over TLS: {err:?}", kind.name()))
            .into_inner()
            .status;
        assert_eq!(status, 1, "{} is SERVING", kind.name());
    }
}

/// A call that never reached the service: refused by the transport, not answered; its error
/// (with its sources) mentions `why` (the TLS alert or verification failure).
fn assert_refused(
    result: Result<tonic::Response<v1::Answer>, tonic::Status>,
    who: &str,
    why: &str,
) {
    let status = result.expect_err(who);
    assert!(
        matches!(status.code(), Code::Unavailable | Code::Unknown),
        "{who}: {status:?}"
    );
    assert!(format!("{status:?}").contains(why), "{who}: {status:?}");
}

#[tokio::test]
async fn tls_serves_clients_that_trust_its_ca_and_no_others() {
    let pki = Pki::new();
    let sandbox = start(&pki.settings(false)).await;
    assert!(
        sandbox
            .endpoint(ServiceKind::Retrieval)
            .starts_with("https://")
    );
    assert_all_serving(&sandbox).await;
    let last = load(&sandbox).await;

    let answer = retrieval(&sandbox, Some(pki.client(false)))
        .lookup(lookup(last))
        .await
        .expect("a client trusting the CA is served")
        .into_inner();
    assert_eq!(answer.value, "Atlas");
    let ask = retrieval(&sandbox, Some(pki.client(false)))
        .ask(v1::AskRequest {
            caller: caller(TENANT, "alice"),
            text: "Who owns Project Kite?".into(),
            min_sequence: last,
            ..Default::default()
        })
        .await
        .expect("Ask over TLS")
        .into_inner();
    assert!(
        format!("{ask:?}").contains("Atlas"),
        "the answer names the owner: {ask:?}"
    );

    assert_refused(
        retrieval(&sandbox, None).lookup(lookup(last)).await,
        "a plaintext client",
        "transport error",
    );
    assert_refused(
        retrieval(&sandbox, Some(pki.other().client(false)))
            .lookup(lookup(last))
            .await,
        "a client trusting another CA",
        "UnknownIssuer",
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn mtls_serves_only_clients_with_a_certificate_of_its_ca() {
    let pki = Pki::new();
    let sandbox = start(&pki.settings(true)).await;
    // The sandbox's own clients present the CA's client certificate (tls.client_cert_file).
    assert_all_serving(&sandbox).await;
    let last = load(&sandbox).await;

    let answer = retrieval(&sandbox, Some(pki.client(true)))
        .lookup(lookup(last))
        .await
        .expect("a client with a certificate the CA signed is served")
        .into_inner();
    assert_eq!(answer.value, "Atlas");

    assert_refused(
        retrieval(&sandbox, Some(pki.client(false)))
            .lookup(lookup(last))
            .await,
        "a client without a certificate",
        "CertificateRequired",
    );
    // It trusts the server, but its certificate comes from another CA.
    let foreign = pki.client(false).identity(Identity::from_pem(
        pki.other().read("client.pem"),
        pki.other().read("client.key"),
    ));
    assert_refused(
        retrieval(&sandbox, Some(foreign))
            .lookup(lookup(last))
            .await,
        "a client with another CA's certificate",
        "UnknownCA",
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_unreadable_certificate_stops_the_services_naming_its_setting() {
    let pki = Pki::new();
    let missing = Path::new(&pki.path("absent.pem")).display().to_string();
    let store = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/ontoloop.db?mode=rwc", store.path().display());
    let sandbox = Sandbox::start(settings(&[
        ("store.url", &url),
        ("tls.cert_file", &missing),
        ("tls.key_file", &pki.path("server.key")),
        ("tls.ca_file", &pki.path("ca.pem")),
    ]))
    .await
    .expect("the settings load; the services fail when they start serving");
    let err = sandbox
        .shutdown()
        .await
        .expect_err("no certificate to serve");
    assert!(format!("{err:#}").contains("tls.cert_file"), "{err:#}");
}
