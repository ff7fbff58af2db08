//! Tests that need a service of this machine (PostgreSQL, Chromium, moto).
//! Under `DUEL_TEST_SERVICES=required` (what scripts/test.sh and CI set) a
//! missing service fails the test. Otherwise the test says on stderr what it
//! skipped and why, and returns: a plain `cargo test` on a bare machine runs the
//! pure suite. Shared by the referee's and the ladder's tests (`#[path]`).

/// The variable that makes every service a test names required.
pub const REQUIRED_ENV: &str = "DUEL_TEST_SERVICES";

/// Whether missing services fail tests rather than skip them.
pub fn required() -> bool {
    std::env::var(REQUIRED_ENV).is_ok_and(|value| value == "required")
}

/// Call when `service` is missing: fails the test when services are required,
/// otherwise reports the skip. The caller returns right after.
pub fn skip(service: &str, why: &str) {
    assert!(
        !required(),
        "{service} is required ({REQUIRED_ENV}=required) but not available: {why}"
    );
    eprintln!(
        "SKIPPED: {service} is not available ({why}); scripts/test.sh installs it and runs this test"
    );
}

/// The path of a program on PATH, if there is one.
pub fn program(names: &[&str]) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
            .map(|found| found.display().to_string())
    })
}
