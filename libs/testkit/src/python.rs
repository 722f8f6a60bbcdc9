//! The project environment's Python for tests that drive the system from Python clients
//! (`tests/tests/python_client.rs`, `tests/tests/metrics.rs`, `services/ontoloop/tests/mcp.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter of `root`'s `.venv/` (`ONTOLOOP_TEST_PYTHON` overrides), checked to import
/// `modules` (a Python import list, for example `"ontoloop_client, pytest"`); each failure names
/// `setup`, the script that makes the environment.
pub fn venv_python(root: &Path, modules: &str, setup: &str) -> PathBuf {
    let python = std::env::var_os("ONTOLOOP_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    assert!(
        python.is_file(),
        "no Python environment at {}: run `make test`, or `{setup}` once",
        python.display()
    );
    let import = Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .expect("run the environment's python");
    assert!(
        import.status.success(),
        "{} cannot import {modules}: run `{setup}` (make test does)\n{}",
        python.display(),
        String::from_utf8_lossy(&import.stderr)
    );
    python
}
