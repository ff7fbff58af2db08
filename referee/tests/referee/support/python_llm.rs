//! The bot `referee new --lang python --llm` writes, run as an endpoint on
//! loopback in the environment scripts/setup/python-llm.sh makes (the
//! official `openai` package and grpcio): the model-using fighter of the
//! referee's and the ladder's tests. Shared through `#[path]`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The checkout's root: the nearest folder above the test's crate that holds
/// the workspace's `Cargo.lock` (crates sit one or two levels down).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
}

/// The template's source folder in this checkout.
fn template() -> PathBuf {
    workspace_root().join("referee/templates/python-llm")
}

/// The Python of the environment the setup script makes, when it is there.
pub fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("DUEL_PYTHON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/python-llm/venv"));
    let python = venv.join("bin/python");
    python.is_file().then_some(python)
}

/// The environment's folder, for `DUEL_PYTHON_VENV`.
pub fn venv() -> Option<PathBuf> {
    python().and_then(|python| python.parent()?.parent().map(Path::to_path_buf))
}

/// A running LLM bot; killed when dropped.
pub struct LlmBot {
    child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl Drop for LlmBot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the template as bot `name` into `dir`, generates the `duel.v1`
/// stubs beside it, and starts it on a free loopback port.
pub fn start(python: &Path, dir: &Path, name: &str) -> LlmBot {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).expect("bot folder");
    let source = std::fs::read_to_string(template().join("bot.py")).expect("template");
    std::fs::write(folder.join("bot.py"), source.replace("{name}", name)).expect("bot.py");
    start_folder(python, dir, name)
}

/// The Python of the training env's environment (scripts/setup/python-env.sh:
/// `duel_env`, NumPy, grpcio), which the policy bot of `referee new --lang
/// python --from-env` runs in, when it is there.
pub fn env_python() -> Option<PathBuf> {
    let python = workspace_root().join("target/python-env/venv/bin/python");
    python.is_file().then_some(python)
}

/// Writes the policy bot of `referee new --lang python --from-env`
/// (`templates/python-policy/`) as bot `name` into `dir`, trains it for
/// `seconds` against builtin:random with its own train.py, and starts it.
pub fn start_policy_bot(python: &Path, dir: &Path, name: &str, seconds: u32) -> LlmBot {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).expect("bot folder");
    let template = workspace_root().join("referee/templates/python-policy");
    for file in ["bot.py", "policy.py", "train.py"] {
        let source = std::fs::read_to_string(template.join(file)).expect("template");
        std::fs::write(folder.join(file), source.replace("{name}", name)).expect("bot file");
    }
    let trained = Command::new(python)
        .arg(folder.join("train.py"))
        .args(["--seconds", &seconds.to_string(), "--evaluate", "10"])
        .output()
        .expect("train.py runs");
    assert!(
        trained.status.success(),
        "train.py failed: {}",
        String::from_utf8_lossy(&trained.stderr)
    );
    assert!(
        folder.join("policy.npz").is_file(),
        "train.py saved no policy"
    );
    start_folder(python, dir, name)
}

/// Generates the `duel.v1` stubs into `dir` and starts `dir/name/bot.py` on a
/// free loopback port.
fn start_folder(python: &Path, dir: &Path, name: &str) -> LlmBot {
    let folder = dir.join(name);
    let stubs = dir.join("stubs");
    std::fs::create_dir_all(&stubs).expect("stubs folder");
    let protos = workspace_root().join("proto");
    let generated = Command::new(python)
        .args(["-m", "grpc_tools.protoc", "-I"])
        .arg(&protos)
        .arg(format!("--python_out={}", stubs.display()))
        .arg(format!("--grpc_python_out={}", stubs.display()))
        .args(["duel/v1/bot.proto", "duel/v1/inference.proto"].map(|file| protos.join(file)))
        .status()
        .expect("grpc_tools runs");
    assert!(generated.success(), "stubs generated");
    for package in ["duel", "duel/v1"] {
        std::fs::write(stubs.join(package).join("__init__.py"), "").expect("package");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("address")
        .port();
    let log = dir.join(format!("{name}.log"));
    let output = std::fs::File::create(&log).expect("log file");
    let child = Command::new(python)
        .arg(folder.join("bot.py"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("PYTHONPATH", &stubs)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(output.try_clone().expect("log"))
        .stderr(output)
        .spawn()
        .expect("the bot starts");
    let mut bot = LlmBot {
        child,
        url: format!("grpc://127.0.0.1:{port}"),
        log,
    };
    let started = Instant::now();
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    while std::net::TcpStream::connect_timeout(&address, Duration::from_millis(100)).is_err() {
        assert!(
            bot.child.try_wait().expect("wait").is_none(),
            "the bot exited: {}",
            std::fs::read_to_string(&bot.log).unwrap_or_default()
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the bot never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    bot
}
