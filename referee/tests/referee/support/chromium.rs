//! A headless Chromium driven over the DevTools protocol, for tests of the
//! pages in a real browser (the replay viewer; the ladder's Duel TV widget
//! includes this file too, beside its own `services`).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

/// A headless Chromium with its own profile, killed on drop.
#[derive(Debug)]
pub struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
    socket: tungstenite::WebSocket<TcpStream>,
    session: String,
    next_id: u64,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Chromium to drive: `CHROMIUM`, or the first on PATH.
fn chromium_binary() -> Option<String> {
    std::env::var("CHROMIUM")
        .ok()
        .or_else(|| super::services::program(&["chromium", "chromium-browser", "google-chrome"]))
}

impl Chromium {
    /// A headless Chromium, or `None` (the test skipped) where there is none.
    pub fn launch() -> Option<Chromium> {
        let Some(binary) = chromium_binary() else {
            super::services::skip(
                "Chromium",
                "not on PATH and CHROMIUM unset; scripts/ensure-chromium.sh installs it",
            );
            return None;
        };
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
                "--window-size=1280,900",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("cannot start Chromium ({error}): run scripts/ensure-chromium.sh")
            });
        let stderr = child.stderr.take().expect("stderr");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("DevTools listening on ").nth(1) {
                    let _ = sender.send(url.trim().to_owned());
                }
            }
        });
        let browser_url = receiver
            .recv_timeout(Duration::from_secs(30))
            .expect("Chromium printed its DevTools address within 30 s");
        let host = browser_url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .expect("host:port")
            .to_owned();
        let stream = TcpStream::connect(&host).expect("connect to DevTools");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let (socket, _) =
            tungstenite::client(browser_url.as_str(), stream).expect("DevTools handshake");
        let mut chromium = Chromium {
            child,
            _profile: profile,
            socket,
            session: String::new(),
            next_id: 0,
        };
        let target = chromium.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("target id").to_owned();
        let attached = chromium.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        chromium.session = attached["sessionId"]
            .as_str()
            .expect("session id")
            .to_owned();
        Some(chromium)
    }

    /// Sends one command (to the page once attached) and waits for its answer.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .unwrap_or_else(|error| panic!("{method} failed: {error}"))
    }

    /// [`Chromium::call`], with the protocol's error as `Err` (a page between
    /// two documents answers "Inspected target navigated or closed").
    pub fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(tungstenite::Message::text(message.to_string()))
            .expect("send to DevTools");
        loop {
            let reply = self.socket.read().expect("DevTools reply");
            let tungstenite::Message::Text(text) = reply else {
                continue;
            };
            let value: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
            if value["id"] == json!(id) {
                return match value.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(value["result"].clone()),
                };
            }
        }
    }

    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Opens `url` as a new document and waits until the viewer on it is
    /// ready. Going through about:blank first, and waiting for each location,
    /// keeps a check from reading the previous page (a URL differing from the
    /// last only by its #fragment would otherwise be a same-document jump).
    pub fn open(&mut self, url: &str) {
        self.navigate(url);
        self.wait_for(
            "document.readyState === 'complete' && document.body !== null \
             && document.body.dataset.state === 'ready'",
            &json!(true),
        );
    }

    /// Loads `url` as a new document (see [`Chromium::open`]), without waiting
    /// for the viewer.
    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": "about:blank" }));
        self.wait_for("location.href", &json!("about:blank"));
        self.call("Page.navigate", json!({ "url": url }));
        // Not compared with `url`: the browser may normalise it.
        self.wait_for("location.href !== 'about:blank'", &json!(true));
    }

    /// Polls `expression` until it equals `expected` (20 s at most). While
    /// the page is between documents (after a click on a link) the protocol
    /// refuses to evaluate, and while the new document loads its elements may
    /// not exist yet (the expression throws); both count as not yet, and the
    /// last answer is shown if the time runs out.
    pub fn wait_for(&mut self, expression: &str, expected: &Value) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let answer = self.try_call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            );
            let value = match &answer {
                Ok(result) if result.get("exceptionDetails").is_none() => {
                    result["result"]["value"].clone()
                }
                Ok(_) | Err(_) => Value::Null,
            };
            if &value == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{expression} stayed {value}, expected {expected} (last answer {answer:?})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A real mouse click in the middle of the element, scrolled into view
    /// first (a `#r…e…` link may have scrolled the page away from it).
    pub fn click(&mut self, selector: &str) {
        let rect = self.eval(&format!(
            "(() => {{ const e = document.querySelector('{selector}'); \
             e.scrollIntoView({{ block: 'center' }}); const r = e.getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (rect[0].as_f64().expect("x"), rect[1].as_f64().expect("y"));
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    pub fn screenshot(&mut self, path: &PathBuf) {
        // Let the bars finish their 0.25 s transition.
        std::thread::sleep(Duration::from_millis(400));
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("png data"))
            .expect("base64");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(path, png).expect("write screenshot");
    }
}

/// `NAME` under the target folder, created: where tests keep screenshots.
pub fn screenshot_folder(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    let folder = target.join(name);
    std::fs::create_dir_all(&folder).expect("screenshot folder");
    folder
}
