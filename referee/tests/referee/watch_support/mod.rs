//! The real `referee local … --watch` as a child process: its stdout read line
//! by line, the viewer URL it prints, and ctrl-c (SIGINT) to end it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// How long a test waits for a line it expects (a hang guard, not a timing).
const LINE_WAIT: Duration = Duration::from_secs(120);

pub struct Watched {
    child: Child,
    lines: Receiver<String>,
    /// Every stdout line so far.
    pub seen: Vec<String>,
}

impl Watched {
    /// Starts `referee ARGS… --watch` with no browser to open (no DISPLAY,
    /// WAYLAND_DISPLAY or BROWSER), so it only prints the URL.
    pub fn start(args: &[&str]) -> Watched {
        let mut child = Command::new(env!("CARGO_BIN_EXE_referee"))
            .args(args)
            .arg("--watch")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("BROWSER")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the referee binary runs");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Watched {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for the next stdout line containing `needle`.
    pub fn line_containing(&mut self, needle: &str) -> String {
        loop {
            let line = self.lines.recv_timeout(LINE_WAIT).unwrap_or_else(|_| {
                panic!(
                    "no line with {needle:?} on stdout; so far:\n{}",
                    self.seen.join("\n")
                )
            });
            self.seen.push(line.clone());
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// The live viewer URL the command printed.
    pub fn view_url(&mut self) -> String {
        let line = self.line_containing("watch live: ");
        line.split("watch live: ")
            .nth(1)
            .expect("a URL after the label")
            .trim()
            .to_owned()
    }

    /// Sends ctrl-c (SIGINT) and waits for the process to end.
    pub fn interrupt(mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGINT sent");
        self.child.wait().expect("the referee exits")
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `http://host:port` and the match id of a `…/live/{id}/view` URL.
pub fn split_view_url(url: &str) -> (String, String) {
    let (base, rest) = url.split_once("/live/").expect("a /live/ URL");
    let id = rest.strip_suffix("/view").expect("ends with /view");
    (base.to_owned(), id.to_owned())
}

/// Reads server-sent events until the stream ends: (event name, JSON data).
pub async fn read_events(response: reqwest::Response) -> Vec<(String, serde_json::Value)> {
    let text = response.text().await.expect("event stream");
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let mut name = None;
        let mut data = None;
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("event: ") {
                name = Some(value.to_owned());
            } else if let Some(value) = line.strip_prefix("data: ") {
                data = Some(serde_json::from_str(value).expect("event JSON"));
            }
        }
        if let (Some(name), Some(data)) = (name, data) {
            events.push((name, data));
        }
    }
    events
}
