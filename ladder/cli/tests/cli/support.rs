//! The `ladder` binary in tests: a `ladder serve` on ephemeral ports (its
//! addresses read from its log) and the CLI against it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const LADDER: &str = env!("CARGO_BIN_EXE_ladder");

#[derive(Debug)]
pub struct Server {
    pub child: Child,
    /// The gRPC API.
    pub url: String,
    /// The replay service, when started with `--http`.
    pub http: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of `field=` in a log line.
fn field<'a>(line: &'a str, field: &str) -> Option<&'a str> {
    let rest = line.split(&format!(" {field}=")).nth(1)?;
    rest.split_whitespace().next()
}

/// Starts `ladder serve` on an ephemeral port, with its replays and signing
/// key under `dir` and `extra` flags, and reads its addresses from its log.
/// A `ladder worker` process, killed if the test fails before stopping it.
#[derive(Debug)]
pub struct Worker(pub Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ladder init` on the database, with operator `root` whose token goes to
/// `dir/root.token`; with `signing_key`, also the replay signing key at
/// `dir/signing.key`. Returns what it printed.
pub fn init_root(db_url: &str, dir: &Path, signing_key: bool) -> String {
    let mut init = Command::new(LADDER);
    init.args(["init", "--db", db_url, "--operator", "root", "--token-file"])
        .arg(dir.join("root.token"));
    if signing_key {
        init.arg("--signing-key").arg(dir.join("signing.key"));
    }
    let init = init.output().expect("ladder init");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    String::from_utf8_lossy(&init.stdout).into_owned()
}

pub fn start_server(db_url: &str, dir: &Path, extra: &[&str]) -> Server {
    // Two in-process workers unless the caller says otherwise.
    let workers: &[&str] = if extra.contains(&"--workers") {
        &[]
    } else {
        &["--workers", "2"]
    };
    let mut child = Command::new(LADDER)
        .args(["serve", "--db", db_url, "--listen", "127.0.0.1:0"])
        .args(workers)
        .arg("--replays")
        .arg(dir.join("replays"))
        .arg("--signing-key")
        .arg(dir.join("signing.key"))
        .args(["--wave-interval-ms", "200"])
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ladder serve");
    let stderr = child.stderr.take().expect("serve stderr");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent && let Some(address) = field(&line, "address") {
                let http = field(&line, "replays_http")
                    .filter(|http| *http != "off")
                    .map(str::to_owned);
                let _ = sender.send((address.to_owned(), http));
                sent = true;
            }
            eprintln!("[serve] {line}");
        }
    });
    let Ok((address, http)) = receiver.recv_timeout(Duration::from_secs(30)) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("ladder serve did not log its address within 30 s");
    };
    Server {
        child,
        url: format!("http://{address}"),
        http: http.map(|address| format!("http://{address}")),
    }
}

#[derive(Debug)]
pub struct Cli<'a> {
    pub server: &'a str,
}

impl Cli<'_> {
    pub fn run(&self, token: &Path, args: &[&str]) -> Output {
        Command::new(LADDER)
            .arg("--server")
            .arg(self.server)
            .arg("--token-file")
            .arg(token)
            .args(args)
            .env_remove("DUEL_LADDER_TOKEN")
            .output()
            .expect("run ladder")
    }

    pub fn ok(&self, token: &Path, args: &[&str]) -> String {
        let output = self.run(token, args);
        assert!(
            output.status.success(),
            "ladder {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub fn json(&self, token: &Path, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        let text = self.ok(token, &args);
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{args:?}: {error}: {text}"))
    }

    /// A refused command: exit code 2 (bad input, the rule both binaries
    /// share), one line naming the reason.
    pub fn refused(&self, token: &Path, args: &[&str], reason: &str) {
        let output = self.run(token, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?} should be refused with exit code 2: {stderr}"
        );
        assert!(stderr.contains(reason), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}

/// A `ladder worker` process with `workers` workers over the database, the
/// replays and the signing key under `dir` (as [`start_server`] uses them),
/// plus `extra` flags. Its log goes to `dir/worker.log`.
pub fn start_worker(db_url: &str, dir: &Path, workers: usize, extra: &[&str]) -> Worker {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("worker.log"))
        .expect("worker log");
    Worker(
        Command::new(LADDER)
            .args(["worker", "--db", db_url, "--workers", &workers.to_string()])
            .arg("--replays")
            .arg(dir.join("replays"))
            .arg("--signing-key")
            .arg(dir.join("signing.key"))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start ladder worker"),
    )
}

/// An owner account `owner` (its token in `dir/<owner>.token`, `credits`
/// granted) with bot `bot` registered in the light class from `source`
/// (`["--builtin", spec]` or `["--wasm", path]`), activated at `stake` when
/// given. Returns the token's path.
pub fn owner_with_bot(
    cli: &Cli,
    dir: &Path,
    owner: &str,
    credits: u32,
    bot: &str,
    source: [&str; 2],
    stake: Option<u32>,
) -> std::path::PathBuf {
    let root = dir.join("root.token");
    let token = dir.join(format!("{owner}.token"));
    let token_text = token.to_str().expect("utf-8 path");
    cli.ok(&root, &["account", "create", owner, "--out", token_text]);
    let credits = credits.to_string();
    let grant_id = format!("seed:{owner}");
    cli.ok(
        &root,
        &["credits", "grant", owner, &credits, "--id", &grant_id],
    );
    let [flag, value] = source;
    cli.ok(
        &token,
        &["bot", "register", bot, "--class", "light", flag, value],
    );
    if let Some(stake) = stake {
        cli.ok(
            &token,
            &["bot", "activate", bot, "--stake", &stake.to_string()],
        );
    }
    token
}

/// Stops a `ladder` process with SIGTERM and asserts it exits cleanly within 20 s.
pub async fn terminate(child: &mut Child, what: &str) {
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{what} exited with {status}");
            return;
        }
        assert!(Instant::now() < deadline, "{what} did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
