//! Compiles `proto/ontoloop/v1/*.proto` with the vendored `protoc`, so a fresh machine needs no
//! system package.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let protos: Vec<PathBuf> = ["common", "retrieval", "firewall", "telemetry", "analyst"]
        .iter()
        .map(|name| root.join(format!("ontoloop/v1/{name}.proto")))
        .collect();
    for proto in &protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let well_known = protoc_bin_vendored::include_path()?;
    // SAFETY: build scripts are single-threaded; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("PROTOC", protoc) };
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_prost_build::configure()
        // A request that does not decode is the caller's error, not the service's.
        .codec_path("crate::codec::StrictCodec")
        .file_descriptor_set_path(out_dir.join("ontoloop_descriptor.bin"))
        .compile_protos(&protos, &[root, well_known])?;
    Ok(())
}
