//! Accounts, the bots registry with version history, and the queue.

use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::ledger_sql::{apply_transfer, create_account};
use super::rows::{bot_from_row, load_bot, load_own_bot, stake_precondition_tx};
use super::seasons::ensure_rating;
use super::{Store, count_of, get, is_unique_violation, write_tx};
use crate::error::{LadderError, Result};
use crate::limits::{MAX_LIST_ROWS, MAX_QUEUE_PER_CLASS};
use crate::params::Params;
use duel_ladder_core::auth::{self, Role, User};
use duel_ladder_core::ledger::{
    ISSUANCE_ACCOUNT, TransferOp, TransferOutcome, TransferRequest, owner_account,
};
use duel_ladder_core::limits::{MAX_TRANSFER_CREDITS, QUOTA_DAY_MS};
use duel_ladder_core::model::{
    Bot, BotSource, OwnerQuotas, OwnerUsage, Play, QueueEntry, check_account_name, check_name,
    class_from_name,
};
use duel_ladder_core::profile::ProfileEdit;

fn user_from_row(row: &AnyRow) -> Result<User> {
    Ok(User {
        id: get(row, "id")?,
        name: get(row, "name")?,
        role: Role::from_name(&get::<String>(row, "role")?)?,
    })
}

async fn insert_user(
    conn: &mut AnyConnection,
    name: &str,
    role: Role,
    token: &str,
    now: i64,
) -> Result<User> {
    let id = uuid::Uuid::new_v4().to_string();
    let inserted = sqlx::query(
        "INSERT INTO users (id, name, role, token_hash, created_ms) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(id.clone())
    .bind(name.to_owned())
    .bind(role.name())
    .bind(auth::token_hash(token))
    .bind(now)
    .execute(&mut *conn)
    .await;
    match inserted {
        Ok(_) => {}
        Err(error) if is_unique_violation(&error) => {
            return Err(LadderError::Conflict(format!(
                "an account named {name} exists (names are unique whatever their letter case)"
            )));
        }
        Err(error) => return Err(error.into()),
    }
    create_account(conn, &owner_account(&id), "owner").await?;
    Ok(User {
        id,
        name: name.to_owned(),
        role,
    })
}

async fn bootstrap_tx(
    conn: &mut AnyConnection,
    name: &str,
    token: &str,
    now: i64,
) -> Result<Option<User>> {
    let existing = sqlx::query("SELECT id FROM users WHERE role = 'operator' LIMIT 1")
        .fetch_optional(&mut *conn)
        .await?;
    if existing.is_some() {
        return Ok(None);
    }
    insert_user(conn, name, Role::Operator, token, now)
        .await
        .map(Some)
}

/// The versions and stored bytes an owner holds (compile time is read apart).
async fn holdings_tx(conn: &mut AnyConnection, owner_id: &str) -> Result<(i64, i64)> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS versions FROM bot_versions v JOIN bots b ON b.id = v.bot_id WHERE b.owner_id = $1",
    )
    .bind(owner_id.to_owned())
    .fetch_one(&mut *conn)
    .await?;
    let versions: i64 = get(&row, "versions")?;
    // Each distinct component once: a blob uploaded twice is stored once.
    // PostgreSQL sums BIGINT to NUMERIC, hence the cast.
    let row = sqlx::query(
        "SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) AS stored FROM wasm_blobs WHERE digest IN \
         (SELECT v.digest FROM bot_versions v JOIN bots b ON b.id = v.bot_id WHERE b.owner_id = $1 AND v.kind = 'wasm')",
    )
    .bind(owner_id.to_owned())
    .fetch_one(&mut *conn)
    .await?;
    Ok((versions, get(&row, "stored")?))
}

/// Refuses a registration that would take `owner` over its version or
/// stored-bytes quota. Runs inside the registering transaction, so the counts
/// include every version committed before it.
async fn check_holdings_tx(
    conn: &mut AnyConnection,
    owner: &User,
    source: &BotSource,
    quotas: &OwnerQuotas,
) -> Result<()> {
    let (versions, stored) = holdings_tx(conn, &owner.id).await?;
    if u64::try_from(versions).unwrap_or(u64::MAX) >= quotas.max_bot_versions {
        return Err(LadderError::Quota(format!(
            "bot versions per owner: {} has {versions} of {} (ladder serve --max-versions-per-owner)",
            owner.name, quotas.max_bot_versions
        )));
    }
    let Some(bytes) = &source.wasm else {
        return Ok(());
    };
    let counted = sqlx::query(
        "SELECT 1 AS one FROM bot_versions v JOIN bots b ON b.id = v.bot_id \
         WHERE b.owner_id = $1 AND v.kind = 'wasm' AND v.digest = $2 LIMIT 1",
    )
    .bind(owner.id.clone())
    .bind(source.digest.clone())
    .fetch_optional(&mut *conn)
    .await?
    .is_some();
    let added = if counted { 0 } else { bytes.len() as u64 };
    let total = u64::try_from(stored).unwrap_or(0).saturating_add(added);
    if total > quotas.max_stored_bytes {
        return Err(LadderError::Quota(format!(
            "stored bytes per owner: {} would hold {total} bytes of components, over {} (ladder serve --max-stored-bytes-per-owner)",
            owner.name, quotas.max_stored_bytes
        )));
    }
    Ok(())
}

async fn register_tx(
    conn: &mut AnyConnection,
    owner: &User,
    name: &str,
    class: &str,
    source: &BotSource,
    quotas: Option<&OwnerQuotas>,
    now: i64,
) -> Result<Bot> {
    if let Some(quotas) = quotas {
        check_holdings_tx(conn, owner, source, quotas).await?;
    }
    if let Some(bytes) = &source.wasm {
        sqlx::query("INSERT INTO wasm_blobs (digest, bytes, size_bytes) VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING")
            .bind(source.digest.clone())
            .bind(bytes.clone())
            .bind(bytes.len() as i64)
            .execute(&mut *conn)
            .await?;
    }
    let existing =
        sqlx::query("SELECT id, owner_id, class, current_version FROM bots WHERE name = $1")
            .bind(name.to_owned())
            .fetch_optional(&mut *conn)
            .await?;
    let (bot_id, version) = match existing {
        Some(row) => {
            let owner_id: String = get(&row, "owner_id")?;
            if owner_id != owner.id {
                return Err(LadderError::PermissionDenied(format!(
                    "bot {name} belongs to another owner"
                )));
            }
            let stored_class: String = get(&row, "class")?;
            if stored_class != class {
                return Err(LadderError::Invalid(format!(
                    "bot {name} is registered in class {stored_class}; a bot keeps one weight class"
                )));
            }
            let bot_id: String = get(&row, "id")?;
            let version = get::<i64>(&row, "current_version")? + 1;
            sqlx::query("UPDATE bots SET current_version = $1 WHERE id = $2")
                .bind(version)
                .bind(bot_id.clone())
                .execute(&mut *conn)
                .await?;
            (bot_id, version)
        }
        None => {
            let bot_id = uuid::Uuid::new_v4().to_string();
            sqlx::query(
                "INSERT INTO bots (id, owner_id, name, class, current_version, created_ms) VALUES ($1, $2, $3, $4, 1, $5)",
            )
            .bind(bot_id.clone())
            .bind(owner.id.clone())
            .bind(name.to_owned())
            .bind(class.to_owned())
            .bind(now)
            .execute(&mut *conn)
            .await
            .map_err(|error| {
                if is_unique_violation(&error) {
                    LadderError::Conflict(format!(
                        "a bot named {name} exists (names are unique whatever their letter case)"
                    ))
                } else {
                    error.into()
                }
            })?;
            (bot_id, 1)
        }
    };
    sqlx::query(
        "INSERT INTO bot_versions (bot_id, version, kind, spec, digest, created_ms) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(bot_id.clone())
    .bind(version)
    .bind(source.kind.name())
    .bind(source.spec.clone())
    .bind(source.digest.clone())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    load_bot(conn, name).await
}

async fn enqueue_tx(
    conn: &mut AnyConnection,
    row_locks: bool,
    owner: &User,
    bot_name: &str,
    stake: i64,
    now: i64,
) -> Result<QueueEntry> {
    let (bot, season) = stake_precondition_tx(conn, row_locks, owner, bot_name, stake).await?;
    if bot.play != Play::Inactive {
        return Err(LadderError::Conflict(format!(
            "bot {bot_name} plays continuously ({}); `ladder bot deactivate {bot_name}` to queue it once",
            bot.play.state_name()
        )));
    }
    let class = bot.class.name();
    let waiting = count_of(
        conn,
        "SELECT COUNT(*) AS n FROM queue WHERE class = $1",
        class,
    )
    .await?;
    if waiting >= MAX_QUEUE_PER_CLASS {
        return Err(LadderError::Invalid(format!(
            "the {class} queue is full ({MAX_QUEUE_PER_CLASS} bots)"
        )));
    }
    let inserted = sqlx::query(
        "INSERT INTO queue (bot_id, owner_id, class, stake, enqueued_ms, waves_waited) VALUES ($1, $2, $3, $4, $5, 0) \
         ON CONFLICT (bot_id) DO NOTHING",
    )
    .bind(bot.id.clone())
    .bind(owner.id.clone())
    .bind(class)
    .bind(stake)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(LadderError::Conflict(format!(
            "bot {bot_name} is already queued"
        )));
    }
    ensure_rating(conn, season.id, &bot.id, class).await?;
    Ok(QueueEntry {
        bot_id: bot.id,
        bot_name: bot.name,
        owner_id: owner.id.clone(),
        class: bot.class,
        stake,
        enqueued_ms: now,
        waves_waited: 0,
    })
}

async fn edit_profile_tx(
    conn: &mut AnyConnection,
    owner: &User,
    bot_name: &str,
    edit: &ProfileEdit,
) -> Result<Bot> {
    let bot = load_own_bot(conn, owner, bot_name).await?;
    // The column names are fixed here, never from input.
    for (column, value) in [
        ("description", &edit.description),
        ("author", &edit.author),
        ("source_url", &edit.source_url),
    ] {
        if let Some(value) = value {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE bots SET {column} = NULLIF($1, '') WHERE id = $2"
            )))
            .bind(value.clone())
            .bind(bot.id.clone())
            .execute(&mut *conn)
            .await?;
        }
    }
    load_bot(conn, bot_name).await
}

impl Store {
    /// Creates the first operator if there is none; `None` if one exists.
    pub async fn bootstrap_operator(&self, name: &str) -> Result<Option<(User, String)>> {
        check_account_name(name)?;
        let token = crate::new_token()?;
        let user = write_tx!(self, |conn| bootstrap_tx(conn, name, &token, self.now()))?;
        Ok(user.map(|user| (user, token)))
    }

    /// Creates an account and returns it with its token (shown once).
    pub async fn create_user(&self, name: &str, role: Role) -> Result<(User, String)> {
        check_account_name(name)?;
        let token = crate::new_token()?;
        let user = write_tx!(self, |conn| insert_user(
            conn,
            name,
            role,
            &token,
            self.now()
        ))?;
        Ok((user, token))
    }

    pub async fn user_by_name(&self, name: &str) -> Result<User> {
        let row = sqlx::query("SELECT id, name, role FROM users WHERE name = $1")
            .bind(name.to_owned())
            .fetch_optional(&mut *self.writer().await?)
            .await?
            .ok_or_else(|| LadderError::NotFound(format!("account {name}")))?;
        user_from_row(&row)
    }

    /// Credits an owner from the issuance account; `transfer_id` makes retries safe.
    pub async fn grant_credits(
        &self,
        owner: &User,
        amount: i64,
        transfer_id: &str,
    ) -> Result<TransferOutcome> {
        if amount <= 0 || amount > MAX_TRANSFER_CREDITS {
            return Err(LadderError::Invalid(format!(
                "grant must be 1 to {MAX_TRANSFER_CREDITS} credits"
            )));
        }
        let request = TransferRequest {
            id: transfer_id.to_owned(),
            op: TransferOp::Single {
                debit: ISSUANCE_ACCOUNT.to_owned(),
                credit: owner_account(&owner.id),
                amount,
            },
            memo: format!("grant to {}", owner.name),
        };
        write_tx!(self, |conn| apply_transfer(conn, &request, self.now()))
    }

    /// Registers a bot, or a new version of one the owner already has, with
    /// no quota (house bots, tests).
    pub async fn register_bot(
        &self,
        owner: &User,
        name: &str,
        class: &str,
        source: &BotSource,
    ) -> Result<Bot> {
        self.register_bot_within(owner, name, class, source, None)
            .await
    }

    /// [`Store::register_bot`], refused with [`LadderError::Quota`] when it
    /// would take the owner over `quotas` (versions, stored bytes).
    pub async fn register_bot_within(
        &self,
        owner: &User,
        name: &str,
        class: &str,
        source: &BotSource,
        quotas: Option<&OwnerQuotas>,
    ) -> Result<Bot> {
        check_name("bot", name)?;
        class_from_name(class)?;
        write_tx!(self, |conn| register_tx(
            conn,
            owner,
            name,
            class,
            source,
            quotas,
            self.now()
        ))
    }

    /// What an owner uses against its quotas now.
    pub async fn owner_usage(&self, owner_id: &str) -> Result<OwnerUsage> {
        let mut conn = self.writer().await?;
        let (bot_versions, stored_bytes) = holdings_tx(&mut conn, owner_id).await?;
        let row =
            sqlx::query("SELECT compile_ms FROM compile_usage WHERE owner_id = $1 AND day = $2")
                .bind(owner_id.to_owned())
                .bind(self.now().div_euclid(QUOTA_DAY_MS))
                .fetch_optional(&mut *conn)
                .await?;
        let compile_ms_today = row
            .map(|row| get::<i64>(&row, "compile_ms"))
            .transpose()?
            .unwrap_or(0);
        Ok(OwnerUsage {
            bot_versions,
            stored_bytes,
            compile_ms_today,
        })
    }

    /// Adds `compile_ms` to what the owner's uploads spent compiling today (UTC).
    pub async fn add_compile_ms(&self, owner_id: &str, compile_ms: i64) -> Result<()> {
        let owner_id = owner_id.to_owned();
        let day = self.now().div_euclid(QUOTA_DAY_MS);
        write_tx!(self, |conn| async {
            sqlx::query(
                "INSERT INTO compile_usage (owner_id, day, compile_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (owner_id, day) DO UPDATE SET compile_ms = compile_usage.compile_ms + $3",
            )
            .bind(owner_id.clone())
            .bind(day)
            .bind(compile_ms)
            .execute(&mut *conn)
            .await?;
            Ok(())
        })
    }

    /// Changes one of `owner`'s bots' profile (description, author, source
    /// URL): checked, trimmed; an empty field is cleared.
    pub async fn edit_profile(
        &self,
        owner: &User,
        bot_name: &str,
        edit: &ProfileEdit,
    ) -> Result<Bot> {
        let edit = edit.checked()?;
        write_tx!(self, |conn| edit_profile_tx(conn, owner, bot_name, &edit))
    }

    /// Bots, optionally of one owner, by name.
    pub async fn bots(&self, owner_id: Option<&str>) -> Result<Vec<Bot>> {
        // The owner filter only when given (crate::params).
        let mut params = Params::after(1);
        let owner = owner_id.map_or(String::new(), |owner_id| {
            format!("WHERE b.owner_id = {}", params.placeholder(owner_id))
        });
        let rows = params
            .bind(
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT b.id, b.name, b.owner_id, u.name AS owner_name, b.class, b.current_version, \
                     b.active_stake, b.active_since, b.paused_reason, b.description, b.author, b.source_url \
                     FROM bots b JOIN users u ON u.id = b.owner_id {owner} ORDER BY b.name LIMIT $1"
                )))
                .bind(MAX_LIST_ROWS),
            )
            .fetch_all(&mut *self.writer().await?)
            .await?;
        rows.iter().map(bot_from_row).collect()
    }

    /// The stored bytes of a WASM component.
    pub async fn wasm_blob(&self, digest: &str) -> Result<Vec<u8>> {
        let row = sqlx::query("SELECT bytes FROM wasm_blobs WHERE digest = $1")
            .bind(digest.to_owned())
            .fetch_optional(&mut *self.writer().await?)
            .await?
            .ok_or_else(|| LadderError::NotFound(format!("component {digest}")))?;
        get(&row, "bytes")
    }

    pub async fn enqueue(&self, owner: &User, bot_name: &str, stake: i64) -> Result<QueueEntry> {
        duel_ladder_core::ledger::check_stake(stake)?;
        write_tx!(self, |conn| enqueue_tx(
            conn,
            self.dialect().row_locks(),
            owner,
            bot_name,
            stake,
            self.now()
        ))
    }

    /// Takes a bot out of the queue; `owner` must own it.
    pub async fn dequeue(&self, owner: &User, bot_name: &str) -> Result<()> {
        let bot = load_bot(&mut *self.writer().await?, bot_name).await?;
        if bot.owner_id != owner.id {
            return Err(LadderError::PermissionDenied(format!(
                "bot {bot_name} belongs to {}",
                bot.owner_name
            )));
        }
        let done = sqlx::query("DELETE FROM queue WHERE bot_id = $1")
            .bind(bot.id)
            .execute(&mut *self.writer().await?)
            .await?;
        if done.rows_affected() == 0 {
            return Err(LadderError::NotFound(format!(
                "bot {bot_name} is not queued"
            )));
        }
        Ok(())
    }

    pub async fn queue(&self, class: Option<&str>) -> Result<Vec<QueueEntry>> {
        // The class filter only when given (crate::params).
        let mut params = Params::after(1);
        let class = class.map_or(String::new(), |class| {
            format!("WHERE q.class = {}", params.placeholder(class))
        });
        let rows = params
            .bind(
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT q.bot_id, b.name AS bot_name, q.owner_id, q.class, q.stake, q.enqueued_ms, q.waves_waited \
                     FROM queue q JOIN bots b ON b.id = q.bot_id {class} \
                     ORDER BY q.enqueued_ms, b.name LIMIT $1"
                )))
                .bind(MAX_LIST_ROWS),
            )
            .fetch_all(&mut *self.writer().await?)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(QueueEntry {
                    bot_id: get(row, "bot_id")?,
                    bot_name: get(row, "bot_name")?,
                    owner_id: get(row, "owner_id")?,
                    class: class_from_name(&get::<String>(row, "class")?)?,
                    stake: get(row, "stake")?,
                    enqueued_ms: get(row, "enqueued_ms")?,
                    waves_waited: get(row, "waves_waited")?,
                })
            })
            .collect()
    }

    pub async fn set_class_open(&self, class: &str, open: bool) -> Result<()> {
        class_from_name(class)?;
        sqlx::query("UPDATE classes SET open = $1 WHERE name = $2")
            .bind(i64::from(open))
            .bind(class.to_owned())
            .execute(&mut *self.writer().await?)
            .await?;
        Ok(())
    }
}

/// The account `token` belongs to, read on `conn`.
pub(crate) async fn authenticate_on(conn: &mut AnyConnection, token: &str) -> Result<User> {
    let row = sqlx::query("SELECT id, name, role FROM users WHERE token_hash = $1")
        .bind(auth::token_hash(token))
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| LadderError::Unauthenticated("the token matches no account".to_owned()))?;
    user_from_row(&row)
}
