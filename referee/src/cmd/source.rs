//! Bots from source: a bot spec that names a folder (a Rust bot crate or a
//! Python bot) is built into a component once, kept in a cache keyed by the
//! digest of its sources, and played from there.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use duel_referee::BotSpec;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sha2::{Digest, Sha256};

/// The componentize-py release the Python bots are built with (the one
/// `scripts/build-bots` installs).
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// The WIT world a bot implements, as componentize-py names it (the newest).
const WORLD: &str = duel_sandbox::WORLD_NAME;

/// The most files a source folder may hold (a folder of data is a mistake, not a
/// bot: better a clear error than hashing a home directory).
const MAX_SOURCE_FILES: usize = 10_000;

/// Folders never part of a bot's sources: build output and tool caches.
const SKIPPED_DIRS: [&str; 5] = ["target", "__pycache__", "node_modules", ".venv", "venv"];

/// How long a build may stay silent before its progress line shows.
const QUIET_BUILD: Duration = Duration::from_millis(300);

/// A bot spec as the user wrote it, with a source folder built and replaced by
/// its component (or, for a Python endpoint bot, started as a process).
#[derive(Debug)]
pub struct ResolvedBot {
    pub spec: BotSpec,
    /// For a folder: the name shown (the folder's) and the spec as given.
    pub shown: Option<(String, String)>,
    /// A Python endpoint bot's process: it runs while this is kept.
    pub process: Option<std::sync::Arc<super::python_endpoint::BotProcess>>,
}

impl ResolvedBot {
    pub fn fighter(&self) -> duel_referee::Fighter {
        let fighter = duel_referee::Fighter::from(self.spec.clone());
        match &self.shown {
            Some((name, given)) => fighter.shown(name.clone(), given.clone()),
            None => fighter,
        }
    }

    pub fn entrant(&self) -> Result<duel_referee::arena::pool::Entrant> {
        Ok(match &self.shown {
            Some((name, given)) => duel_referee::arena::pool::Entrant::shown(
                self.spec.clone(),
                name.clone(),
                given.clone(),
            ),
            None => duel_referee::arena::pool::Entrant::parse(&self.spec.to_string())?,
        })
    }
}

/// Every form of bot spec the CLI takes, folders included, for errors.
fn accepted_forms() -> String {
    format!(
        "a bot's source folder (a Rust crate with Cargo.toml, a Python bot with app.py, or a Python endpoint bot with bot.py), a .wasm component, builtin:NAME ({}), or grpc://host:port",
        duel_referee::spec::BUILTIN_HELP
    )
}

/// A spec that names no builtin and no address, and no folder or `.wasm`
/// file: says whether the path is missing or is some other file, with every
/// form a spec may take (one line).
fn not_a_spec(text: &str, path: &Path) -> anyhow::Error {
    let found = match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            format!("{} does not exist", path.display())
        }
        Err(error) => format!("cannot read {}: {error}", path.display()),
        Ok(_) => format!("{} is not a folder nor a .wasm file", path.display()),
    };
    // `counter` for `builtin:counter`.
    let guess = BotSpec::parse(&format!("builtin:{text}"))
        .map(|spec| format!(" (did you mean {spec}?)"))
        .unwrap_or_default();
    anyhow::anyhow!(
        "bot spec {text:?}: {found}{guess}; a bot spec is {}",
        accepted_forms()
    )
}

/// Parses `text` as a bot spec; a folder is built (or taken from the cache).
pub fn resolve(text: &str) -> Result<ResolvedBot> {
    let path = Path::new(text);
    let looks_like_spec = text.starts_with("builtin:") || text.contains("://");
    if !looks_like_spec && !path.is_dir() && !text.ends_with(".wasm") {
        return Err(not_a_spec(text, path));
    }
    if !looks_like_spec && path.is_dir() {
        let name = folder_name(path);
        if super::python_endpoint::is_python_endpoint(path) {
            let process = super::python_endpoint::start(path, &name, &cache_dir()?)
                .with_context(|| format!("cannot run the endpoint bot {}", path.display()))?;
            return Ok(ResolvedBot {
                spec: BotSpec::parse(&process.url)?,
                shown: Some((name, text.to_owned())),
                process: Some(std::sync::Arc::new(process)),
            });
        }
        let component = build_folder(path)?;
        return Ok(ResolvedBot {
            spec: BotSpec::Wasm(component),
            shown: Some((name, text.to_owned())),
            process: None,
        });
    }
    Ok(ResolvedBot {
        spec: BotSpec::parse(text)?,
        shown: None,
        process: None,
    })
}

/// What a folder holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Language {
    /// `Cargo.toml`: a crate built for wasm32-wasip2 (depending on duel-bot-sdk).
    Rust,
    /// `app.py`: componentize-py's `app` module implementing the world.
    Python,
}

impl Language {
    fn of(folder: &Path) -> Result<Language> {
        if folder.join("Cargo.toml").is_file() {
            Ok(Language::Rust)
        } else if folder.join("app.py").is_file() {
            Ok(Language::Python)
        } else {
            bail!(
                "{} is a folder but not a bot: expected a Rust bot crate (Cargo.toml), a Python bot (app.py) or a Python endpoint bot (bot.py); `referee new NAME` writes each",
                folder.display()
            )
        }
    }

    fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
        }
    }

    /// What builds the component, said in the progress line.
    fn builder(self) -> &'static str {
        match self {
            Language::Rust => "cargo build --release --target wasm32-wasip2",
            Language::Python => "componentize-py",
        }
    }
}

fn folder_name(folder: &Path) -> String {
    let absolute = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
    absolute
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bot".to_owned())
}

/// Where built bots are kept: `$DUEL_BOT_CACHE`, else `bots/` beside the
/// compiled-component cache (`~/.cache/duel/bots`).
fn cache_dir() -> Result<PathBuf> {
    if let Ok(dir) = std::env::var("DUEL_BOT_CACHE")
        && !dir.trim().is_empty()
    {
        return Ok(PathBuf::from(dir));
    }
    let wasm = duel_referee::env::wasm_cache_dir()
        .context("no place for built bots: set DUEL_BOT_CACHE or HOME")?;
    Ok(wasm.with_file_name("bots"))
}

/// Builds the bot in `folder` unless a component of exactly these sources is
/// cached; returns the component's path.
pub fn build_folder(folder: &Path) -> Result<PathBuf> {
    let language = Language::of(folder)?;
    let name = folder_name(folder);
    let digest = sources_digest(folder, language)?;
    let cache = cache_dir()?;
    let component = cache.join(format!("{name}-{}.wasm", &digest[..16]));
    if component.is_file() {
        return Ok(component);
    }
    std::fs::create_dir_all(&cache)
        .with_context(|| format!("cannot create the bot cache {}", cache.display()))?;
    // What is done and why, not a guess at how long: the line after the
    // build says how long it took.
    let progress = Progress::start(&format!(
        "building {name} with {} (no build of these sources in the cache)…",
        language.builder()
    ));
    let partial = cache.join(format!(
        ".{name}-{}.{}.partial",
        &digest[..16],
        std::process::id()
    ));
    let built = match language {
        Language::Rust => build_rust(folder, &cache, &partial),
        Language::Python => build_python(folder, &cache, &partial),
    };
    let elapsed = progress.finish();
    if let Err(error) = built {
        let _ = std::fs::remove_file(&partial);
        return Err(error.context(format!(
            "cannot build {} ({})",
            folder.display(),
            language.name()
        )));
    }
    std::fs::rename(&partial, &component)
        .with_context(|| format!("cannot keep the built bot at {}", component.display()))?;
    // The first cargo build writes Cargo.lock into the folder: the sources the
    // next run sees are these, so the component is kept under their digest too.
    let after = sources_digest(folder, language)?;
    if after != digest {
        let again = cache.join(format!("{name}-{}.wasm", &after[..16]));
        std::fs::copy(&component, &again)
            .with_context(|| format!("cannot keep the built bot at {}", again.display()))?;
    }
    eprintln!(
        "built {name} in {:.1} s ({})",
        elapsed.as_secs_f64(),
        component.display()
    );
    Ok(component)
}

/// A SHA-256 over the folder's source files (relative path and contents, in
/// path order) and what builds them, so an edit or a new builder rebuilds.
fn sources_digest(folder: &Path, language: Language) -> Result<String> {
    let mut files = Vec::new();
    collect_sources(folder, folder, &mut files)?;
    files.sort();
    let mut hasher = Sha256::new();
    hasher.update(language.name().as_bytes());
    hasher.update([0]);
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    hasher.update([0]);
    if language == Language::Python {
        hasher.update(COMPONENTIZE_PY_VERSION.as_bytes());
        hasher.update(duel_sandbox::WORLD_WIT.as_bytes());
    }
    for relative in &files {
        let bytes = std::fs::read(folder.join(relative))
            .with_context(|| format!("cannot read {}", folder.join(relative).display()))?;
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

fn collect_sources(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.ends_with(".wasm") {
            continue;
        }
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot read {}", entry.path().display()))?;
        if kind.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_ref()) {
                collect_sources(root, &entry.path(), files)?;
            }
        } else if kind.is_file() {
            if files.len() >= MAX_SOURCE_FILES {
                bail!(
                    "{} holds more than {MAX_SOURCE_FILES} files: is it really a bot's folder?",
                    root.display()
                );
            }
            if let Ok(relative) = entry.path().strip_prefix(root) {
                files.push(relative.to_path_buf());
            }
        }
    }
    Ok(())
}

fn build_rust(folder: &Path, cache: &Path, out: &Path) -> Result<()> {
    ensure_wasm_target()?;
    let manifest = folder.join("Cargo.toml");
    let output = Command::new(cargo())
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(cache.join("cargo-target"))
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::null())
        .output()
        .context("cannot run cargo (is Rust installed? https://rustup.rs)")?;
    if !output.status.success() {
        bail!("cargo failed:\n{}", tail(&output.stderr, 40));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let artifact = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .flat_map(|message| {
            message["filenames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|name| name.as_str().map(PathBuf::from))
        })
        .rfind(|path| path.extension().is_some_and(|ext| ext == "wasm"))
        .with_context(|| {
            format!(
                "cargo built no .wasm: is {} a library with crate-type = [\"cdylib\"]?",
                manifest.display()
            )
        })?;
    std::fs::copy(&artifact, out).with_context(|| format!("cannot copy {}", artifact.display()))?;
    Ok(())
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn ensure_wasm_target() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(output) if String::from_utf8_lossy(&output.stdout).contains("wasm32-wasip2") => Ok(()),
        Ok(_) => {
            eprintln!("installing the wasm32-wasip2 target (rustup target add wasm32-wasip2)…");
            let status = Command::new("rustup")
                .args(["target", "add", "wasm32-wasip2"])
                .status()
                .context("cannot run rustup")?;
            if !status.success() {
                bail!("`rustup target add wasm32-wasip2` failed");
            }
            Ok(())
        }
        // Without rustup the toolchain may still have the target; cargo says if not.
        Err(_) => Ok(()),
    }
}

fn build_python(folder: &Path, cache: &Path, out: &Path) -> Result<()> {
    let version = Command::new("componentize-py").arg("--version").output();
    match version {
        Ok(output) if String::from_utf8_lossy(&output.stdout).contains(COMPONENTIZE_PY_VERSION) => {
        }
        _ => bail!(
            "componentize-py {COMPONENTIZE_PY_VERSION} is needed to build Python bots: python3 -m pip install componentize-py=={COMPONENTIZE_PY_VERSION}"
        ),
    }
    let wit_dir = cache.join("wit");
    std::fs::create_dir_all(&wit_dir)
        .with_context(|| format!("cannot create {}", wit_dir.display()))?;
    let wit = wit_dir.join("world.wit");
    if std::fs::read_to_string(&wit).ok().as_deref() != Some(duel_sandbox::WORLD_WIT) {
        duel_files::write_atomic(
            &wit,
            duel_sandbox::WORLD_WIT.as_bytes(),
            duel_files::WriteOptions::PUBLIC,
        )
        .map_err(|error| anyhow::anyhow!("cannot write {error}"))?;
    }
    let output = Command::new("componentize-py")
        .arg("-d")
        .arg(&wit_dir)
        .args(["-w", WORLD, "componentize", "-p"])
        .arg(folder)
        .args(["app", "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .context("cannot run componentize-py")?;
    if !output.status.success() {
        let mut text = tail(&output.stderr, 40);
        if text.trim().is_empty() {
            text = tail(&output.stdout, 40);
        }
        bail!("componentize-py failed:\n{text}");
    }
    Ok(())
}

/// The last `lines` lines of a tool's output.
fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A progress line on stderr with the time so far, shown once work takes longer
/// than [`QUIET_BUILD`] (a spinner on a terminal, one plain line otherwise).
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
}

impl Progress {
    pub fn start(message: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(message.to_owned());
        if bar.is_hidden() {
            eprintln!("{message}");
        } else {
            bar.enable_steady_tick(QUIET_BUILD);
        }
        Progress {
            bar,
            started: Instant::now(),
        }
    }

    pub fn finish(self) -> Duration {
        self.bar.finish_and_clear();
        self.started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_sources_and_ignores_build_output() {
        let dir = tempfile::tempdir().expect("temp dir");
        let folder = dir.path().join("mybot");
        std::fs::create_dir_all(folder.join("src")).expect("mkdir");
        std::fs::write(folder.join("Cargo.toml"), "[package]\nname = \"mybot\"\n").expect("write");
        std::fs::write(folder.join("src/lib.rs"), "// one\n").expect("write");
        let first = sources_digest(&folder, Language::Rust).expect("digest");
        std::fs::create_dir_all(folder.join("target/release")).expect("mkdir");
        std::fs::write(folder.join("target/release/mybot.wasm"), "x").expect("write");
        std::fs::write(folder.join(".hidden"), "x").expect("write");
        assert_eq!(
            sources_digest(&folder, Language::Rust).expect("digest"),
            first
        );
        std::fs::write(folder.join("src/lib.rs"), "// two\n").expect("write");
        let second = sources_digest(&folder, Language::Rust).expect("digest");
        assert_ne!(second, first);
    }

    #[test]
    fn a_folder_that_is_no_bot_says_what_it_expected() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = Language::of(dir.path()).expect_err("no bot");
        assert!(error.to_string().contains("Cargo.toml"), "{error}");
        assert!(error.to_string().contains("app.py"), "{error}");
    }
}

/// A line on stderr if some work is still going after a while (compiling a
/// large component the first time), and nothing if it finishes before; once
/// shown, its end is said with the time it took.
#[derive(Debug)]
pub struct SlowNotice {
    /// Set when the work is done; whether the notice was shown.
    state: std::sync::Arc<std::sync::Mutex<NoticeState>>,
    done: Option<std::sync::mpsc::Sender<()>>,
    started: Instant,
    finished: &'static str,
}

#[derive(Debug, Default)]
struct NoticeState {
    done: bool,
    shown: bool,
}

impl SlowNotice {
    /// `message` once `delay` has passed; `finished` (followed by the time
    /// taken) when done, if `message` was shown.
    pub fn after(delay: Duration, message: &'static str, finished: &'static str) -> SlowNotice {
        let (done, finished_work) = std::sync::mpsc::channel::<()>();
        let state = std::sync::Arc::new(std::sync::Mutex::new(NoticeState::default()));
        let shared = std::sync::Arc::clone(&state);
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                finished_work.recv_timeout(delay)
            {
                let mut state = shared.lock().unwrap_or_else(|poison| poison.into_inner());
                if !state.done {
                    state.shown = true;
                    eprintln!("{message}");
                }
            }
        });
        SlowNotice {
            state,
            done: Some(done),
            started: Instant::now(),
            finished,
        }
    }

    pub fn done(mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        state.done = true;
        if state.shown {
            eprintln!(
                "{} in {:.1} s",
                self.finished,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}
