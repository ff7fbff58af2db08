//! What the ladder's tests share (a dev-dependency of its crates): test
//! databases — a fresh SQLite file, or a fresh PostgreSQL database on
//! 127.0.0.1:5432 (user postgres, trust auth) created and dropped per test —,
//! [`both_backends!`] to run one test body on each, real bots ([`bots`]),
//! matches accepted under drawn ids ([`accept_pair`]), reproducible random
//! numbers ([`rng`]), and the referee tests' headless Chromium and service
//! checks.
//! Where PostgreSQL is down, its tests fail under `DUEL_TEST_SERVICES=required`
//! (scripts/test.sh) and are skipped, saying so, otherwise.

pub mod bots;
#[path = "../../../referee/tests/referee/support/chromium.rs"]
pub mod chromium;
pub mod rng;
#[path = "../../../referee/tests/referee/support/services.rs"]
pub mod services;

use std::sync::atomic::{AtomicU64, Ordering};

use duel_ladder_core::auth::{Role, User};
use duel_ladder_core::model::Match;
use duel_ladder_store::{PairSide, Store};
use sqlx::Connection;

pub const POSTGRES_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

#[derive(Debug)]
pub struct TestDb {
    pub store: Store,
    pub url: String,
    postgres_name: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn unique_name() -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "ladder_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        &random[..8]
    )
}

impl TestDb {
    pub async fn new(backend: &str) -> TestDb {
        match backend {
            "sqlite" => TestDb::sqlite().await,
            "postgres" => TestDb::postgres().await,
            other => panic!("unknown backend {other}"),
        }
    }

    pub async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("ladder.db").display());
        let store = Store::connect(&url).await.expect("open SQLite store");
        TestDb {
            store,
            url,
            postgres_name: None,
            _dir: Some(dir),
        }
    }

    pub async fn postgres() -> TestDb {
        sqlx::any::install_default_drivers();
        let name = unique_name();
        let mut admin = match sqlx::AnyConnection::connect(POSTGRES_ADMIN_URL).await {
            Ok(admin) => admin,
            Err(error) => panic!(
                "PostgreSQL is not reachable at {POSTGRES_ADMIN_URL} ({error}); start it with scripts/ensure-postgres.sh"
            ),
        };
        for statement in [
            format!("CREATE DATABASE \"{name}\""),
            // Durability is not under test; commit latency would only slow the suite.
            format!("ALTER DATABASE \"{name}\" SET synchronous_commit = off"),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                .execute(&mut admin)
                .await
                .expect("create test database");
        }
        let _ = admin.close().await;
        let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
        let store = Store::connect(&url).await.expect("open PostgreSQL store");
        TestDb {
            store,
            url,
            postgres_name: Some(name),
            _dir: None,
        }
    }

    /// Closes the store and drops the PostgreSQL database.
    pub async fn cleanup(self) {
        self.store.close().await;
        if let Some(name) = &self.postgres_name {
            let mut admin = sqlx::AnyConnection::connect(POSTGRES_ADMIN_URL)
                .await
                .expect("admin connection");
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
            )))
            .execute(&mut admin)
            .await
            .expect("drop test database");
            let _ = admin.close().await;
        }
    }

    /// An owner with `credits` granted.
    pub async fn owner(&self, name: &str, credits: i64) -> (User, String) {
        let (user, token) = self
            .store
            .create_user(name, Role::Owner)
            .await
            .expect("create owner");
        if credits > 0 {
            self.store
                .grant_credits(&user, credits, &format!("grant:{name}"))
                .await
                .expect("grant credits");
        }
        (user, token)
    }
}

/// Accepts a pairing outside the queue ([`Store::accept_pair`]) under a fresh
/// match id and a seed of the tests' own; the service draws both with the
/// referee's generators.
pub async fn accept_pair(store: &Store, sides: [PairSide; 2]) -> duel_ladder_store::Result<Match> {
    static SEEDS: AtomicU64 = AtomicU64::new(1);
    let mut rng = rng::SplitMix64::new(SEEDS.fetch_add(1, Ordering::Relaxed));
    let seed = i64::try_from(rng.below(1_000_000_000)).expect("below 10^9");
    store
        .accept_pair(sides, &uuid::Uuid::new_v4().to_string(), seed)
        .await
}

/// Whether PostgreSQL answers; reports the skip (or fails) when it does not.
pub async fn postgres_reachable() -> bool {
    sqlx::any::install_default_drivers();
    match sqlx::AnyConnection::connect(POSTGRES_ADMIN_URL).await {
        Ok(connection) => {
            let _ = connection.close().await;
            true
        }
        Err(error) => {
            services::skip(
                "PostgreSQL",
                &format!("{POSTGRES_ADMIN_URL}: {error}; scripts/ensure-postgres.sh starts it"),
            );
            false
        }
    }
}

/// Generates `sqlite` and `postgres` tests running `$body(&TestDb)`.
#[macro_export]
macro_rules! both_backends {
    ($name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let db = $crate::TestDb::new("sqlite").await;
                super::$body(&db).await;
                db.cleanup().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if !$crate::postgres_reachable().await {
                    return;
                }
                let db = $crate::TestDb::new("postgres").await;
                super::$body(&db).await;
                db.cleanup().await;
            }
        }
    };
}
