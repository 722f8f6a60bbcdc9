//! For tests that run the `ontoloop` binary: free ports for the four services in its environment
//! variables, and `ontoloop up` started as a child process and waited for until it prints
//! `ready`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Environment variables giving each service's gRPC port and the four HTTP ports a free port,
/// eight distinct ones: all are held at once while chosen, so the system never hands one out
/// twice (which the settings refuse as a port used by another service).
pub fn ports_env() -> Vec<(String, String)> {
    let held: Vec<std::net::TcpListener> = (0..8)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    let ports: Vec<String> = held
        .iter()
        .map(|l| l.local_addr().expect("a bound port").port().to_string())
        .collect();
    drop(held);
    let mut env: Vec<(String, String)> = ["RETRIEVAL", "FIREWALL", "TELEMETRY", "ANALYST"]
        .iter()
        .zip(&ports)
        .map(|(service, port)| (format!("ONTOLOOP__SERVICES__{service}_PORT"), port.clone()))
        .collect();
    env.push((
        "ONTOLOOP__SERVICES__HTTP_PORTS".to_owned(),
        ports[4..].join(","),
    ));
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
