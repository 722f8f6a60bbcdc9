//! For tests that run the `ontoloop` binary: free ports for the four services in its environment
//! variables, and `ontoloop up` started as a child process and waited for until it prints
//! `ready`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::servers::free_port;

/// Environment variables giving each service's gRPC port and the four HTTP ports a free port.
pub fn ports_env() -> Vec<(String, String)> {
    let grpc = ["RETRIEVAL", "FIREWALL", "TELEMETRY", "ANALYST"].map(|service| {
        (
            format!("ONTOLOOP__SERVICES__{service}_PORT"),
            free_port().to_string(),
        )
    });
    let http = (0..4)
        .map(|_| free_port().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut env = grpc.to_vec();
    env.push(("ONTOLOOP__SERVICES__HTTP_PORTS".to_owned(), http));
    env
}

/// `ontoloop up` running as a child process.
pub struct Up {
    /// The process.
    pub child: Child,
    /// Its stdout after `ready`, line by line.
    pub lines: Receiver<String>,
    /// What it printed up to and including `ready`.
    pub printed: Vec<String>,
}

impl Up {
    /// Spawns `command` (an `ontoloop up`) with stdout read line by line and stderr dropped, and
    /// waits up to a minute for it to print `ready`; kills it and panics when it does not.
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ontoloop up");
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
        while !printed.iter().any(|l: &String| l.starts_with("ready")) {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => printed.push(line),
                Err(_) => {
                    let _ = child.kill();
                    panic!("ontoloop up never said ready: {printed:?}");
                }
            }
        }
        Self {
            child,
            lines,
            printed,
        }
    }
}
