//! Rebuilds when a migration changes: `sqlx::migrate!` embeds the folders at
//! compile time and cargo does not track them on its own.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/sqlite");
    println!("cargo:rerun-if-changed=../../migrations/postgres");
}
