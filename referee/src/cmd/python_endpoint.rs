//! Python endpoint bots from their folder: a folder with `bot.py` (a
//! `duel.v1.Bot` server, as `referee new --lang python --llm` writes) is run
//! as a process on a loopback port for as long as the command plays it, with
//! its own Python environment (its `requirements.txt` installed once, cached
//! by their digest) and the `duel.v1` stubs generated from the protos this
//! referee was built with. Endpoint bots can use any library (the official
//! `openai` package through `openai_base_url`); WASM bots cannot open sockets.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The environment variable naming a Python environment to run endpoint bots
/// with, as it is: nothing is installed into it (tests and offline machines
/// set it; without it the referee makes one per `requirements.txt`).
pub const PYTHON_VENV_ENV: &str = "DUEL_PYTHON_VENV";

/// How long a bot process has to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the port is tried while the process starts.
const START_POLL: Duration = Duration::from_millis(50);

/// Lines of the bot's own output shown when it fails to start.
const LOG_TAIL_LINES: usize = 20;

/// Whether `folder` is a Python endpoint bot: `bot.py`, and neither a
/// component's `app.py` nor a crate's `Cargo.toml`.
pub fn is_python_endpoint(folder: &Path) -> bool {
    folder.join("bot.py").is_file()
        && !folder.join("app.py").is_file()
        && !folder.join("Cargo.toml").is_file()
}

/// A running bot process, killed when this is dropped.
#[derive(Debug)]
pub struct BotProcess {
    child: Child,
    /// Where its output goes.
    pub log: PathBuf,
    /// `grpc://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for BotProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the bot in `folder` on a free loopback port, in its Python
/// environment (made or reused under `cache`), and waits until it listens.
pub fn start(folder: &Path, name: &str, cache: &Path) -> Result<BotProcess> {
    let folder = &std::fs::canonicalize(folder)
        .with_context(|| format!("cannot resolve {}", folder.display()))?;
    let python = environment(folder, cache)?;
    let stubs = stubs(&python, cache)?;
    let port = free_port()?;
    let logs = cache.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let log = logs.join(format!("{name}.log"));
    let output = std::fs::File::create(&log)
        .with_context(|| format!("cannot write the bot's log {}", log.display()))?;
    let errors = output
        .try_clone()
        .with_context(|| format!("cannot write the bot's log {}", log.display()))?;
    let child = Command::new(&python)
        .arg(folder.join("bot.py"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(folder)
        .env("PYTHONPATH", &stubs)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(errors)
        .spawn()
        .with_context(|| {
            format!(
                "cannot start {} with {}",
                folder.display(),
                python.display()
            )
        })?;
    let mut process = BotProcess {
        child,
        log,
        url: format!("grpc://127.0.0.1:{port}"),
    };
    wait_until_listening(&mut process, port)?;
    Ok(process)
}

fn wait_until_listening(process: &mut BotProcess, port: u16) -> Result<()> {
    let started = Instant::now();
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    loop {
        if std::net::TcpStream::connect_timeout(&address, START_POLL).is_ok() {
            return Ok(());
        }
        if let Some(status) = process.child.try_wait().context("cannot watch the bot")? {
            bail!(
                "the bot exited ({status}) before listening; its output ({}):\n{}",
                process.log.display(),
                tail(&process.log)
            );
        }
        if started.elapsed() > START_TIMEOUT {
            bail!(
                "the bot did not listen on 127.0.0.1:{port} within {} s; its output ({}):\n{}",
                START_TIMEOUT.as_secs(),
                process.log.display(),
                tail(&process.log)
            );
        }
        std::thread::sleep(START_POLL);
    }
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// A port the kernel says is free now (the bot binds it a moment later).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("cannot find a free loopback port for the bot")?;
    Ok(listener
        .local_addr()
        .context("cannot read the free port")?
        .port())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The Python to run the bot with: `$DUEL_PYTHON_VENV`'s as it is, else an
/// environment made once per `requirements.txt` (plus grpcio-tools, for the
/// stubs) under the cache.
fn environment(folder: &Path, cache: &Path) -> Result<PathBuf> {
    if let Some(venv) = std::env::var_os(PYTHON_VENV_ENV).filter(|value| !value.is_empty()) {
        let python = PathBuf::from(venv).join("bin/python");
        if !python.is_file() {
            bail!(
                "{PYTHON_VENV_ENV} names {}, which has no bin/python",
                python.display()
            );
        }
        return Ok(python);
    }
    let requirements = folder.join("requirements.txt");
    let wanted = std::fs::read(&requirements).unwrap_or_default();
    let digest = hex(&Sha256::digest(&wanted));
    let venv = cache.join("venvs").join(&digest[..16]);
    let python = venv.join("bin/python");
    if venv.join(".ready").is_file() {
        return Ok(python);
    }
    // What is done, then how long it took: no guess at the time.
    let started = Instant::now();
    eprintln!(
        "setting up a Python environment for {} (python3 -m venv, pip install of its requirements.txt and grpcio-tools; kept for later runs)…",
        folder.display()
    );
    let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    run(Command::new(&base).args(["-m", "venv"]).arg(&venv))
        .with_context(|| format!("cannot make a Python environment with {base} -m venv"))?;
    let mut install = Command::new(&python);
    install.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "grpcio-tools",
    ]);
    if requirements.is_file() {
        install.arg("-r").arg(&requirements);
    }
    run(&mut install).context("cannot install the bot's requirements")?;
    duel_files::write_atomic(
        &venv.join(".ready"),
        &wanted,
        duel_files::WriteOptions::PUBLIC,
    )
    .map_err(|error| anyhow::anyhow!("cannot mark the environment ready: {error}"))?;
    eprintln!(
        "set up the Python environment in {:.1} s ({})",
        started.elapsed().as_secs_f64(),
        venv.display()
    );
    Ok(python)
}

/// The `duel.v1` stubs for Python, generated once per proto set under the
/// cache; the folder to put on `PYTHONPATH`.
fn stubs(python: &Path, cache: &Path) -> Result<PathBuf> {
    let mut hasher = Sha256::new();
    for (path, text) in duel_proto::PROTO_SOURCES {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    let digest = hex(&hasher.finalize());
    let out = cache.join("python-stubs").join(&digest[..16]);
    if out.join("duel/v1/bot_pb2_grpc.py").is_file() {
        return Ok(out);
    }
    let protos = cache
        .join("python-stubs")
        .join(format!("{}.proto", &digest[..16]));
    for (path, text) in duel_proto::PROTO_SOURCES {
        let file = protos.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        duel_files::write_atomic(&file, text.as_bytes(), duel_files::WriteOptions::PUBLIC)
            .map_err(|error| anyhow::anyhow!("cannot write {error}"))?;
    }
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut generate = Command::new(python);
    generate
        .args(["-m", "grpc_tools.protoc", "-I"])
        .arg(&protos)
        .arg(format!("--python_out={}", out.display()))
        .arg(format!("--grpc_python_out={}", out.display()));
    for (path, _) in duel_proto::PROTO_SOURCES {
        generate.arg(protos.join(path));
    }
    run(&mut generate).context(
        "cannot generate the duel.v1 stubs (the bot's Python environment needs grpcio-tools)",
    )?;
    for package in ["duel", "duel/v1"] {
        let init = out.join(package).join("__init__.py");
        duel_files::write_atomic(&init, b"", duel_files::WriteOptions::PUBLIC)
            .map_err(|error| anyhow::anyhow!("cannot write {error}"))?;
    }
    Ok(out)
}

/// Runs a set-up command, its output shown only when it fails.
fn run(command: &mut Command) -> Result<()> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {:?}", command.get_program()))?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        let lines: Vec<&str> = text.lines().collect();
        bail!(
            "{:?} failed ({}):\n{}",
            command.get_program(),
            output.status,
            lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
        );
    }
    Ok(())
}
