//! `scripts/docker-test.sh` (which .ci/run ends with) builds its Debian
//! stand-in from the mirrors this machine's own apt sources name, never a
//! mirror written in the script: `--apt-sources` prints what it
//! read, from one-line `sources.list` files and deb822 `.sources` stanzas,
//! without source-package, disabled or foreign entries, and fails in one
//! line when no source serves bookworm. Runs no Docker.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/docker-test.sh")
}

fn apt_sources(etc: &Path) -> Output {
    Command::new("bash")
        .arg(script())
        .arg("--apt-sources")
        .env("DUEL_APT_ETC", etc)
        .env("DUEL_DOCKER_WORK", etc.join("work"))
        .output()
        .expect("bash")
}

#[test]
fn the_stand_in_reads_the_machines_apt_sources() {
    let etc = tempfile::tempdir().expect("temp dir");
    let lists = etc.path().join("sources.list.d");
    std::fs::create_dir_all(&lists).expect("sources.list.d");
    std::fs::write(
        etc.path().join("sources.list"),
        "# a comment\n\
         deb [arch=amd64 signed-by=/usr/share/keyrings/debian.gpg] http://mirror.example/debian bookworm main contrib\n\
         deb-src http://mirror.example/debian bookworm main\n\
         deb http://mirror.example/debian bookworm-updates main # trailing comment\n",
    )
    .expect("sources.list");
    std::fs::write(
        lists.join("debian.sources"),
        "Types: deb deb-src\n\
         URIs: http://security.example/debian-security\n\
         Suites: bookworm-security\n\
         Components: main\n\
         Signed-By: /usr/share/keyrings/debian.gpg\n\
         \n\
         Types: deb\n\
         URIs: http://off.example/debian\n\
         Suites: bookworm\n\
         Components: main\n\
         Enabled: no\n",
    )
    .expect("debian.sources");
    std::fs::write(
        lists.join("node.sources"),
        "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n",
    )
    .expect("node.sources");
    // apt reads only *.list and *.sources.
    std::fs::write(
        lists.join("old.list.disabled"),
        "deb http://ignored.example/debian bookworm main\n",
    )
    .expect("a file apt ignores");
    let output = apt_sources(etc.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "http://mirror.example/debian bookworm\n\
         http://mirror.example/debian bookworm-updates\n\
         http://security.example/debian-security bookworm-security\n"
    );

    // No source for bookworm: one line saying so.
    let empty = tempfile::tempdir().expect("temp dir");
    let output = apt_sources(empty.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("name no mirror for bookworm"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn the_script_names_no_mirror() {
    let text = std::fs::read_to_string(script()).expect("the script");
    assert!(
        !text.contains("deb.debian.org"),
        "a mirror is named in the script"
    );
}
