//! Who may do what: every action of the ladder for an authenticated caller.
//! Owners act on their own bots and balances; seasons, classes, the rake and
//! credits need an operator. A refusal happens before anything is written.
//! The gRPC service and the CLI call these, never the store directly.

use std::sync::Arc;

use duel_replays::store::ReplayStore;
use duel_replays::transcript::Transcript;
use duel_rules::WeightClass;
use tokio::sync::Semaphore;

use crate::auth::{Role, User};
use crate::error::{LadderError, Result, ServiceError};
use crate::ledger::{
    HOUSE_ACCOUNT, ISSUANCE_ACCOUNT, LedgerReport, LedgerViolation, TransferOutcome,
};
use crate::limits::{DEFAULT_MAX_CONCURRENT_COMPILES, MAX_RAKE_BP};
use crate::model::{
    Bot, BotKind, BotSource, LadderStatus, Match, MatchState, OwnerQuotas, QueueEntry, Season,
    SideLogs, Standing, check_name, class_from_name,
};
use crate::profile::ProfileEdit;
use crate::reveal::RevealPolicy;
use crate::store::{SeasonChoice, Store, WaveReport};
use crate::validate::{check_endpoint, validate_wasm};
use duel_referee::MatchHost;

/// What an owner uploads or names when registering a bot version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Registration {
    /// `builtin:NAME[:ARGS]`: house bots and tests.
    Builtin(String),
    Wasm(Vec<u8>),
    Endpoint(String),
}

#[derive(Clone, Debug)]
pub struct Ladder {
    pub store: Store,
    /// Validates uploads with the sandbox the workers play them in, and asks
    /// endpoints `Hello` trusting what they trust.
    host: MatchHost,
    /// Operator setting: accept endpoint URLs on loopback and private ranges.
    allow_private_endpoints: bool,
    /// What each owner may keep and spend.
    quotas: OwnerQuotas,
    /// Turns to validate (compile) an upload: compiling is CPU- and
    /// memory-heavy, so uploads beyond these wait for a turn.
    compiles: Arc<Semaphore>,
    /// Where the workers keep replays and transcripts (`None`: this ladder
    /// serves no transcript).
    replays: Option<ReplayStore>,
    /// When transcripts become public (`--reveal-transcripts`), as the site
    /// reads it: after the reveal `MatchTranscript` answers every caller.
    reveal: RevealPolicy,
}

impl Ladder {
    /// A ladder with the default owner quotas and compile concurrency.
    pub fn new(store: Store, host: MatchHost, allow_private_endpoints: bool) -> Ladder {
        Ladder {
            store,
            host,
            allow_private_endpoints,
            quotas: OwnerQuotas::default(),
            compiles: Arc::new(Semaphore::new(DEFAULT_MAX_CONCURRENT_COMPILES)),
            replays: None,
            reveal: RevealPolicy::default(),
        }
    }

    /// The same ladder revealing transcripts to every caller as `reveal` says.
    pub fn with_reveal(mut self, reveal: RevealPolicy) -> Ladder {
        self.reveal = reveal;
        self
    }

    /// The same ladder reading transcripts from `replays`.
    pub fn with_replays(mut self, replays: ReplayStore) -> Ladder {
        self.replays = Some(replays);
        self
    }

    /// The same ladder enforcing `quotas` on every owner.
    pub fn with_quotas(mut self, quotas: OwnerQuotas) -> Ladder {
        self.quotas = quotas;
        self
    }

    /// The same ladder validating at most `compiles` uploads at once (at least one).
    pub fn with_max_concurrent_compiles(mut self, compiles: usize) -> Ladder {
        self.compiles = Arc::new(Semaphore::new(compiles.max(1)));
        self
    }

    pub fn quotas(&self) -> &OwnerQuotas {
        &self.quotas
    }

    /// Refuses before any work when the owner is at its version quota or has
    /// spent its compile seconds for today; the byte quota and the version
    /// quota are checked again, exactly, when the version is written.
    async fn check_quotas(&self, caller: &User, compiles: bool) -> Result<()> {
        let usage = self.store.owner_usage(&caller.id).await?;
        if u64::try_from(usage.bot_versions).unwrap_or(u64::MAX) >= self.quotas.max_bot_versions {
            return Err(LadderError::Quota(format!(
                "bot versions per owner: {} has {} of {} (ladder serve --max-versions-per-owner)",
                caller.name, usage.bot_versions, self.quotas.max_bot_versions
            ))
            .into());
        }
        if compiles
            && u64::try_from(usage.stored_bytes).unwrap_or(u64::MAX) >= self.quotas.max_stored_bytes
        {
            return Err(LadderError::Quota(format!(
                "stored bytes per owner: {} holds {} bytes of components, the quota is {} (ladder serve --max-stored-bytes-per-owner)",
                caller.name, usage.stored_bytes, self.quotas.max_stored_bytes
            )).into());
        }
        let allowed_ms = self.quotas.compile_seconds_per_day.saturating_mul(1_000);
        if compiles && u64::try_from(usage.compile_ms_today).unwrap_or(u64::MAX) >= allowed_ms {
            return Err(LadderError::Quota(format!(
                "compile seconds per day: {}'s uploads spent {} s of {} s compiling today; the count restarts at 00:00 UTC (ladder serve --compile-seconds-per-day)",
                caller.name,
                usage.compile_ms_today / 1_000,
                self.quotas.compile_seconds_per_day
            )).into());
        }
        Ok(())
    }

    /// Validates (compiles) an upload in its turn, charging the time it took
    /// to the owner's compile seconds of today, refused or not.
    async fn validate_upload(&self, caller: &User, bytes: &[u8]) -> Result<String> {
        let _turn = self
            .compiles
            .acquire()
            .await
            .map_err(ServiceError::CompileQueueClosed)?;
        let started = std::time::Instant::now();
        let validated = validate_wasm(&self.host, bytes).await;
        let spent_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.store
            .add_compile_ms(&caller.id, spent_ms.max(1))
            .await?;
        Ok(validated?.digest)
    }

    /// The caller behind a token; no token or an unknown one is refused.
    pub async fn caller(&self, token: Option<&str>) -> Result<User> {
        match token.map(str::trim) {
            None | Some("") => Err(LadderError::Unauthenticated(
                "no token: set DUEL_LADDER_TOKEN or pass --token-file".to_owned(),
            )
            .into()),
            Some(token) => Ok(self.store.reads().authenticate(token).await?),
        }
    }

    pub async fn create_account(
        &self,
        caller: &User,
        name: &str,
        role: Role,
    ) -> Result<(User, String)> {
        caller.require_operator("creating accounts")?;
        if name == HOUSE_ACCOUNT || name == ISSUANCE_ACCOUNT {
            return Err(LadderError::Invalid(format!(
                "{name} is the ledger's own account name; choose another"
            ))
            .into());
        }
        Ok(self.store.create_user(name, role).await?)
    }

    pub async fn grant_credits(
        &self,
        caller: &User,
        owner: &str,
        amount: i64,
        transfer_id: &str,
    ) -> Result<TransferOutcome> {
        caller.require_operator("granting credits")?;
        let owner = self.store.user_by_name(owner).await?;
        Ok(self
            .store
            .grant_credits(&owner, amount, transfer_id)
            .await?)
    }

    /// Sets the rake for matches accepted from now on; matches already queued or
    /// running keep the rake pinned at their acceptance.
    pub async fn set_rake(&self, caller: &User, rake_bp: i64) -> Result<()> {
        caller.require_operator("setting the rake")?;
        if !(0..=MAX_RAKE_BP).contains(&rake_bp) {
            return Err(LadderError::Invalid(format!(
                "rake must be 0 to {MAX_RAKE_BP} basis points"
            ))
            .into());
        }
        Ok(self.store.set_setting("rake_bp", rake_bp).await?)
    }

    pub async fn set_class_open(&self, caller: &User, class: &str, open: bool) -> Result<()> {
        caller.require_operator("opening or closing classes")?;
        Ok(self.store.set_class_open(class, open).await?)
    }

    pub async fn start_season(&self, caller: &User, name: &str) -> Result<Season> {
        caller.require_operator("starting a season")?;
        Ok(self.store.start_season(name).await?)
    }

    pub async fn end_season(&self, caller: &User) -> Result<Season> {
        caller.require_operator("ending a season")?;
        Ok(self.store.end_season().await?)
    }

    pub async fn run_wave(&self, caller: &User, class: WeightClass) -> Result<WaveReport> {
        caller.require_operator("running a pairing wave")?;
        crate::wave::run_wave(&self.store, class).await
    }

    pub async fn ledger_check(
        &self,
        caller: &User,
    ) -> Result<std::result::Result<LedgerReport, LedgerViolation>> {
        caller.require_operator("checking the ledger")?;
        Ok(self.store.ledger_check().await?)
    }

    /// Registers a bot (or a new version of the caller's bot) after validation.
    pub async fn register_bot(
        &self,
        caller: &User,
        name: &str,
        class: &str,
        registration: Registration,
    ) -> Result<Bot> {
        if caller.role != Role::Owner {
            return Err(LadderError::PermissionDenied(
                "bots are registered by owner accounts, not operators".to_owned(),
            )
            .into());
        }
        // The cheap refusals first: validation compiles uploads and dials endpoints.
        check_name("bot", name)?;
        class_from_name(class)?;
        match self.store.reads().bot(name).await {
            Ok(bot) if bot.owner_id != caller.id => {
                return Err(LadderError::PermissionDenied(format!(
                    "bot {name} belongs to another owner"
                ))
                .into());
            }
            Ok(_) | Err(LadderError::NotFound(_)) => {}
            Err(error) => return Err(error.into()),
        }
        self.check_quotas(caller, matches!(registration, Registration::Wasm(_)))
            .await?;
        let source = match registration {
            Registration::Builtin(spec) => match duel_referee::BotSpec::parse(&spec) {
                Ok(duel_referee::BotSpec::Builtin(builtin)) => {
                    let spec = builtin.to_string();
                    BotSource::builtin(spec)
                }
                Ok(_) => {
                    return Err(
                        LadderError::Invalid(format!("{spec:?} is not a builtin: spec")).into(),
                    );
                }
                Err(error) => return Err(LadderError::Invalid(error.to_string()).into()),
            },
            Registration::Wasm(bytes) => {
                let digest = self.validate_upload(caller, &bytes).await?;
                BotSource {
                    kind: BotKind::Wasm,
                    spec: digest.clone(),
                    digest,
                    wasm: Some(bytes),
                }
            }
            Registration::Endpoint(url) => {
                check_endpoint(&self.host, &url, self.allow_private_endpoints).await?;
                BotSource {
                    kind: BotKind::Endpoint,
                    digest: duel_referee::spec::sha256_digest(url.as_bytes()),
                    spec: url,
                    wasm: None,
                }
            }
        };
        Ok(self
            .store
            .register_bot_within(caller, name, class, &source, Some(&self.quotas))
            .await?)
    }

    pub async fn enqueue(&self, caller: &User, bot: &str, stake: i64) -> Result<QueueEntry> {
        Ok(self.store.enqueue(caller, bot, stake).await?)
    }

    /// Makes one of the caller's bots play continuously at `stake` a match.
    pub async fn activate(&self, caller: &User, bot: &str, stake: i64) -> Result<Bot> {
        if caller.role != Role::Owner {
            return Err(LadderError::PermissionDenied(
                "bots are activated by their owners, not operators".to_owned(),
            )
            .into());
        }
        Ok(self.store.activate(caller, bot, stake).await?)
    }

    /// Sets one of the caller's bots' profile. Owner only: the site shows it
    /// as the owner's words.
    pub async fn edit_profile(&self, caller: &User, bot: &str, edit: &ProfileEdit) -> Result<Bot> {
        if caller.role != Role::Owner {
            return Err(LadderError::PermissionDenied(
                "bots' profiles are edited by their owners, not operators".to_owned(),
            )
            .into());
        }
        Ok(self.store.edit_profile(caller, bot, edit).await?)
    }

    /// Stops one of the caller's bots playing continuously.
    pub async fn deactivate(&self, caller: &User, bot: &str) -> Result<Bot> {
        if caller.role != Role::Owner {
            return Err(LadderError::PermissionDenied(
                "bots are deactivated by their owners, not operators".to_owned(),
            )
            .into());
        }
        Ok(self.store.deactivate(caller, bot).await?)
    }

    /// The ladder at a glance. Operator only.
    pub async fn status(&self, caller: &User) -> Result<LadderStatus> {
        caller.require_operator("reading the ladder's status")?;
        Ok(self.store.status().await?)
    }

    pub async fn dequeue(&self, caller: &User, bot: &str) -> Result<()> {
        Ok(self.store.dequeue(caller, bot).await?)
    }

    /// An owner sees its own balance; an operator anyone's, and the house's
    /// (the rake account, `house`).
    pub async fn balance(&self, caller: &User, account: Option<&str>) -> Result<i64> {
        if account == Some(HOUSE_ACCOUNT) {
            caller.require_operator("reading the house's balance")?;
            return Ok(self.store.account(HOUSE_ACCOUNT).await?.available());
        }
        let target = match account {
            None => caller.clone(),
            Some(name) if name == caller.name => caller.clone(),
            Some(name) => {
                caller.require_operator("reading another account's balance")?;
                self.store.user_by_name(name).await?
            }
        };
        Ok(self.store.available(&target.id).await?)
    }

    /// Standings of the season `choice` names, public to every
    /// authenticated caller (see [`Store::chosen_season`]).
    pub async fn standings_of(
        &self,
        _caller: &User,
        choice: &SeasonChoice,
        class: Option<WeightClass>,
    ) -> Result<(Season, Vec<Standing>)> {
        Ok(self.store.standings_of(choice, class).await?)
    }

    /// Standings are public to every authenticated caller.
    pub async fn standings(
        &self,
        _caller: &User,
        season: Option<i64>,
        class: Option<WeightClass>,
    ) -> Result<(Season, Vec<Standing>)> {
        Ok(self.store.standings(season, class).await?)
    }

    /// Adds a version to one of the caller's bots (its class stays).
    pub async fn new_bot_version(
        &self,
        caller: &User,
        name: &str,
        registration: Registration,
    ) -> Result<Bot> {
        let bot = self.own_bot(caller, name).await?;
        self.register_bot(caller, name, bot.class.name(), registration)
            .await
    }

    /// Owners see their own bots, operators every bot.
    pub async fn bots(&self, caller: &User) -> Result<Vec<Bot>> {
        let owner = (!caller.is_operator()).then_some(caller.id.as_str());
        Ok(self.store.bots(owner).await?)
    }

    /// A bot with its versions: its owner or an operator.
    pub async fn bot(&self, caller: &User, name: &str) -> Result<Bot> {
        if caller.is_operator() {
            return Ok(self.store.reads().bot(name).await?);
        }
        self.own_bot(caller, name).await
    }

    async fn own_bot(&self, caller: &User, name: &str) -> Result<Bot> {
        let bot = self.store.reads().bot(name).await?;
        if bot.owner_id != caller.id {
            return Err(LadderError::PermissionDenied(format!(
                "bot {name} belongs to another owner"
            ))
            .into());
        }
        Ok(bot)
    }

    /// Matches are public to every authenticated caller, like standings.
    pub async fn matches(
        &self,
        _caller: &User,
        state: Option<MatchState>,
        bot: Option<&str>,
    ) -> Result<Vec<Match>> {
        let bot_id = match bot {
            Some(name) => Some(self.store.reads().bot(name).await?.id),
            None => None,
        };
        Ok(self.store.matches(state, bot_id.as_deref()).await?)
    }

    pub async fn game(&self, _caller: &User, id: &str) -> Result<Match> {
        Ok(self.store.reads().game(id).await?)
    }

    /// The logs of the caller's bots in a ranked match: only an owner whose bot
    /// fought sees them, and only their own bot's side.
    /// A match's transcript as `caller` may read it: once revealed (the
    /// operator's policy, as the site reads it), every decision; before, an
    /// owner the decisions of its bots in the match, an operator every
    /// decision, and either `bot`'s alone when named.
    pub async fn match_transcript(
        &self,
        caller: &User,
        id: &str,
        bot: Option<&str>,
    ) -> Result<Transcript> {
        let replays = self.replays.as_ref().ok_or_else(|| {
            LadderError::Precondition("this server keeps no transcripts".to_owned())
        })?;
        let game = self.store.reads().game(id).await?;
        let revealed = self
            .store
            .reads()
            .transcript_revealed(self.reveal, &game, self.store.clock().now_ms())
            .await?;
        Ok(crate::store::readable_transcript(replays, &game, caller, bot, revealed).await?)
    }

    pub async fn match_logs(&self, caller: &User, id: &str) -> Result<(Match, Vec<SideLogs>)> {
        let game = self.store.reads().game(id).await?;
        if !game.sides.iter().any(|side| side.owner_id == caller.id) {
            return Err(LadderError::PermissionDenied(format!(
                "match {id}: only the owners of its bots may read their logs"
            ))
            .into());
        }
        let logs = self
            .store
            .match_logs(id)
            .await?
            .into_iter()
            .filter(|side| side.owner_id == caller.id)
            .collect();
        Ok((game, logs))
    }
}
