//! The `duel.v1.Ladder` gRPC service: thin handlers over [`Ladder`] that take
//! the caller the gate authenticated ([`crate::gate`], before the body was
//! decoded), check the request's fields, call the facade and convert the
//! result. [`status_of`] is the one place ladder errors become gRPC codes.

use std::sync::Arc;

use duel_proto::v1 as pb;
use duel_proto::v1::ladder_server::Ladder as LadderApi;
use tonic::codegen::http::HeaderMap;
use tonic::{Request, Response, Status};

use crate::auth::{Role, User};
use crate::error::{LadderError, ServiceError};
use crate::ladder::{Ladder, Registration};
use crate::model::{
    self, Bot, BotKind, LadderStatus, Match, MatchState, Play, Season, Standing, Winner,
};
use crate::profile::ProfileEdit;
use crate::store::SeasonChoice;
use duel_ladder_core::repeat::NotRated;
use duel_referee::grpc::convert::class_to_proto;

/// The service over one ladder; served behind [`crate::gate::Gate`], which
/// builds it.
#[derive(Clone, Debug)]
pub struct LadderService {
    ladder: Arc<Ladder>,
}

impl LadderService {
    pub(crate) fn new(ladder: Arc<Ladder>) -> LadderService {
        LadderService { ladder }
    }

    /// The caller the gate authenticated; a request that did not pass the
    /// gate is authenticated here (the body is decoded by then).
    async fn caller<T>(&self, request: &Request<T>) -> Result<User, Status> {
        if let Some(caller) = request.extensions().get::<User>() {
            return Ok(caller.clone());
        }
        let token = bearer_token_of(request.metadata().as_ref())?;
        self.ladder.caller(token).await.map_err(status_of)
    }
}

/// The token from `authorization: Bearer <token>`; absent is `None`.
pub(crate) fn bearer_token_of(headers: &HeaderMap) -> Result<Option<&str>, Status> {
    let Some(value) = headers.get("authorization") else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| Status::unauthenticated("the authorization header is not ASCII"))?;
    match text.strip_prefix("Bearer ") {
        Some(token) => Ok(Some(token)),
        None => Err(Status::unauthenticated(
            "the authorization header must be `Bearer <token>`",
        )),
    }
}

/// Maps each ladder error to its gRPC code; the message is the error's one
/// line with its causes ([`ServiceError::line`]).
pub fn status_of(error: impl Into<ServiceError>) -> Status {
    let error = error.into();
    let message = error.line();
    let internal = |message: &str| {
        // The database's or the disk's own words stay in the operator's
        // log: clients get a correlation id to quote.
        Status::internal(duel_plumbing::reply::internal("internal error", &message))
    };
    match error {
        ServiceError::Ladder(error) => match error {
            LadderError::Unauthenticated(_) => Status::unauthenticated(message),
            LadderError::PermissionDenied(_) => Status::permission_denied(message),
            LadderError::NotFound(_) => Status::not_found(message),
            LadderError::Invalid(_) => Status::invalid_argument(message),
            LadderError::Conflict(_) => Status::already_exists(message),
            LadderError::Quota(_) => Status::resource_exhausted(message),
            LadderError::InsufficientCredits(_)
            | LadderError::LeaseLost(_)
            | LadderError::Precondition(_) => Status::failed_precondition(message),
            LadderError::Database(_)
            | LadderError::Migrate(_)
            | LadderError::Replay(_)
            | LadderError::Corrupt(_)
            | LadderError::Randomness(_) => internal(&message),
        },
        ServiceError::BotRejected(_) => Status::invalid_argument(message),
        ServiceError::RulesMismatch(_) => Status::failed_precondition(message),
        ServiceError::Match(_)
        | ServiceError::PublishTimedOut { .. }
        | ServiceError::PublishedReplay { .. }
        | ServiceError::Listen { .. }
        | ServiceError::Socket { .. }
        | ServiceError::HostStart(_)
        | ServiceError::Grpc(_)
        | ServiceError::CompileQueueClosed(_) => internal(&message),
    }
}

/// Names and ids never hold control characters (a NUL would be stored as is
/// by SQLite, and control characters garble every listing that prints them)
/// nor bidirectional controls (U+202E reorders a listing around it).
fn printable<'a>(field: &str, value: &'a str) -> Result<&'a str, Status> {
    if value.chars().any(char::is_control) {
        return Err(Status::invalid_argument(format!(
            "{field} must not contain control characters (NUL, newlines, escapes)"
        )));
    }
    if value.chars().any(duel_ladder_core::text::is_bidi_control) {
        return Err(Status::invalid_argument(format!(
            "{field} must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C)"
        )));
    }
    Ok(value)
}

/// A required text field, trimmed: present, and without control characters.
/// Public for the fuzz targets (fuzz/), which feed it decoded requests.
pub fn required<'a>(field: &str, value: &'a str) -> Result<&'a str, Status> {
    let value = printable(field, value.trim())?;
    if value.is_empty() {
        return Err(Status::invalid_argument(format!("{field} is required")));
    }
    Ok(value)
}

fn optional(value: &str) -> Option<&str> {
    let value = value.trim();
    (!value.is_empty()).then_some(value)
}

/// The bot source of a register or new-version request. Public for the fuzz
/// targets (fuzz/).
pub fn registration(source: Option<pb::LadderBotSource>) -> Result<Registration, Status> {
    use pb::ladder_bot_source::Source;
    match source.and_then(|spec| spec.source) {
        Some(Source::Wasm(bytes)) => Ok(Registration::Wasm(bytes)),
        Some(Source::EndpointUrl(url)) => Ok(Registration::Endpoint(
            required("source.endpoint_url", &url)?.to_owned(),
        )),
        Some(Source::Builtin(spec)) => Ok(Registration::Builtin(
            required("source.builtin", &spec)?.to_owned(),
        )),
        None => Err(Status::invalid_argument(
            "source is required: wasm bytes, an endpoint_url or a builtin spec",
        )),
    }
}

fn account_pb(user: &User) -> pb::LadderAccount {
    pb::LadderAccount {
        id: user.id.clone(),
        name: user.name.clone(),
        role: match user.role {
            Role::Operator => pb::LadderRole::Operator,
            Role::Owner => pb::LadderRole::Owner,
        } as i32,
    }
}

fn state_to_proto(state: MatchState) -> pb::LadderMatchState {
    match state {
        MatchState::Queued => pb::LadderMatchState::Queued,
        MatchState::Running => pb::LadderMatchState::Running,
        MatchState::Settled => pb::LadderMatchState::Settled,
        MatchState::Voided => pb::LadderMatchState::Voided,
    }
}

fn kind_to_proto(kind: BotKind) -> pb::LadderBotKind {
    match kind {
        BotKind::Builtin => pb::LadderBotKind::Builtin,
        BotKind::Wasm => pb::LadderBotKind::Wasm,
        BotKind::Endpoint => pb::LadderBotKind::Endpoint,
    }
}

fn play_to_proto(play: &Play) -> pb::LadderBotPlay {
    match play {
        Play::Inactive => pb::LadderBotPlay::Inactive,
        Play::Active { .. } => pb::LadderBotPlay::Active,
        Play::Paused { .. } => pb::LadderBotPlay::Paused,
    }
}

/// A stored reason the rules no longer know reads as unspecified, as a
/// rated match does; the string beside it still names it.
fn not_rated_to_proto(not_rated: Option<&str>) -> pb::LadderNotRated {
    match not_rated.and_then(NotRated::from_name) {
        None => pb::LadderNotRated::Unspecified,
        Some(NotRated::Repeat) => pb::LadderNotRated::Repeat,
        Some(NotRated::PairRated) => pb::LadderNotRated::PairRated,
    }
}

fn winner_to_proto(winner: Winner) -> pb::Winner {
    match winner {
        Winner::A => pb::Winner::A,
        Winner::B => pb::Winner::B,
        Winner::Draw => pb::Winner::Draw,
    }
}

fn bot_pb(bot: Bot) -> pb::LadderBot {
    let play = bot.play.state_name().to_owned();
    let play_enum = play_to_proto(&bot.play) as i32;
    let (active_stake, active_since_ms, paused_reason) = match bot.play {
        Play::Inactive => (0, 0, String::new()),
        Play::Active { stake, since_ms } => (stake, since_ms, String::new()),
        Play::Paused {
            stake,
            since_ms,
            reason,
        } => (stake, since_ms, reason),
    };
    pb::LadderBot {
        play,
        play_enum,
        active_stake,
        active_since_ms,
        paused_reason,
        id: bot.id,
        name: bot.name,
        owner: bot.owner_name,
        weight_class: bot.class.name().to_owned(),
        weight_class_enum: class_to_proto(bot.class) as i32,
        current_version: bot.current_version,
        description: bot.profile.description.unwrap_or_default(),
        author: bot.profile.author.unwrap_or_default(),
        source_url: bot.profile.source_url.unwrap_or_default(),
        versions: bot
            .versions
            .into_iter()
            .map(|version| pb::LadderBotVersion {
                version: version.version,
                kind: version.kind.name().to_owned(),
                kind_enum: kind_to_proto(version.kind) as i32,
                spec: version.spec,
                digest: version.digest,
                created_ms: version.created_ms,
            })
            .collect(),
    }
}

/// A match as `caller` may see it: where the replay is stored (a server
/// path or an object-store URL) is the operator's to know; everyone reads
/// replays through the public service.
fn match_pb(game: Match, caller: &User) -> pb::LadderMatch {
    let [a, b] = game.sides;
    let side = |side: model::MatchSide| pb::LadderMatchSide {
        bot: side.bot_name,
        version: side.version,
        stake: side.stake,
    };
    pb::LadderMatch {
        id: game.id,
        season_id: game.season_id,
        weight_class: game.class.name().to_owned(),
        weight_class_enum: class_to_proto(game.class) as i32,
        state_enum: state_to_proto(game.state) as i32,
        winner_enum: game.winner.map_or(pb::Winner::Unspecified, winner_to_proto) as i32,
        ruleset: game.ruleset,
        budget: game.budget,
        seed: game.seed,
        a: Some(side(a)),
        b: Some(side(b)),
        state: game.state.name().to_owned(),
        attempts: game.attempts,
        accepted_ms: game.accepted_ms,
        finished_ms: game.finished_ms.unwrap_or(0),
        winner: game
            .winner
            .map(|winner| winner.name().to_owned())
            .unwrap_or_default(),
        replay_path: if caller.role == Role::Operator {
            game.replay_path.unwrap_or_default()
        } else {
            String::new()
        },
        note: game.note.unwrap_or_default(),
        last_failure: game.last_failure.unwrap_or_default(),
        repeat_of: game.repeat_of.unwrap_or_default(),
        not_rated_enum: not_rated_to_proto(game.not_rated.as_deref()) as i32,
        not_rated: game.not_rated.unwrap_or_default(),
    }
}

fn season_pb(season: Season) -> pb::LadderSeason {
    pb::LadderSeason {
        id: season.id,
        name: season.name,
        started_ms: season.started_ms,
        ended_ms: season.ended_ms.unwrap_or(0),
    }
}

fn status_pb(status: LadderStatus) -> pb::LadderStatusResponse {
    pb::LadderStatusResponse {
        season: status.season.map(season_pb),
        last_ended: status.last_ended.map(season_pb),
        classes: status
            .classes
            .into_iter()
            .map(|class| pb::LadderClassStatus {
                weight_class: class.class.name().to_owned(),
                weight_class_enum: class_to_proto(class.class) as i32,
                bots: class.bots,
                queued: class.queued,
                active: class.active,
                paused: class.paused,
                accepted: class.accepted,
                running: class.running,
                settled: class.settled,
                voided: class.voided,
                last_wave: class.last_wave.map(|wave| pb::LadderWave {
                    season_id: wave.season_id,
                    at_ms: wave.at_ms,
                    pool: wave.pool,
                    pairs: wave.pairs,
                    duration_ms: wave.duration_ms,
                }),
            })
            .collect(),
    }
}

fn standing_pb(standing: Standing) -> pb::LadderStanding {
    pb::LadderStanding {
        rank: standing.rank,
        bot: standing.bot_name,
        owner: standing.owner_name,
        weight_class: standing.class.name().to_owned(),
        weight_class_enum: class_to_proto(standing.class) as i32,
        rating: standing.rating,
        deviation: standing.deviation,
        volatility: standing.volatility,
        conservative: standing.conservative,
        provisional: standing.provisional,
        games: standing.games,
        wins: standing.wins,
        losses: standing.losses,
        draws: standing.draws,
    }
}

type Reply<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl LadderApi for LadderService {
    async fn create_owner(
        &self,
        request: Request<pb::LadderCreateOwnerRequest>,
    ) -> Reply<pb::LadderCreateOwnerResponse> {
        let caller = self.caller(&request).await?;
        let name = required("name", &request.get_ref().name)?;
        let (user, token) = self
            .ladder
            .create_account(&caller, name, Role::Owner)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderCreateOwnerResponse {
            account: Some(account_pb(&user)),
            token,
        }))
    }

    async fn whoami(
        &self,
        request: Request<pb::LadderWhoamiRequest>,
    ) -> Reply<pb::LadderWhoamiResponse> {
        let caller = self.caller(&request).await?;
        Ok(Response::new(pb::LadderWhoamiResponse {
            account: Some(account_pb(&caller)),
        }))
    }

    async fn grant_credits(
        &self,
        request: Request<pb::LadderGrantCreditsRequest>,
    ) -> Reply<pb::LadderGrantCreditsResponse> {
        let caller = self.caller(&request).await?;
        let body = request.get_ref();
        let owner = required("owner", &body.owner)?;
        if body.amount < 1 {
            return Err(Status::invalid_argument("amount must be at least 1 credit"));
        }
        // Required: an id the server made up would make a client's retry a
        // second grant. The CLI makes one per operation and reuses it.
        let transfer_id = required("transfer_id", &body.transfer_id)?.to_owned();
        let outcome = self
            .ladder
            .grant_credits(&caller, owner, body.amount, &transfer_id)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderGrantCreditsResponse {
            transfer_id,
            already_applied: outcome == crate::ledger::TransferOutcome::AlreadyExists,
        }))
    }

    async fn register_bot(
        &self,
        request: Request<pb::LadderRegisterBotRequest>,
    ) -> Reply<pb::LadderRegisterBotResponse> {
        let caller = self.caller(&request).await?;
        let body = request.into_inner();
        let name = required("name", &body.name)?.to_owned();
        let class = required("weight_class", &body.weight_class)?.to_owned();
        model::class_from_name(&class).map_err(status_of)?;
        let registration = registration(body.source)?;
        let bot = self
            .ladder
            .register_bot(&caller, &name, &class, registration)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderRegisterBotResponse {
            bot: Some(bot_pb(bot)),
        }))
    }

    async fn new_bot_version(
        &self,
        request: Request<pb::LadderNewBotVersionRequest>,
    ) -> Reply<pb::LadderRegisterBotResponse> {
        let caller = self.caller(&request).await?;
        let body = request.into_inner();
        let name = required("name", &body.name)?.to_owned();
        let registration = registration(body.source)?;
        let bot = self
            .ladder
            .new_bot_version(&caller, &name, registration)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderRegisterBotResponse {
            bot: Some(bot_pb(bot)),
        }))
    }

    async fn list_bots(
        &self,
        request: Request<pb::LadderListBotsRequest>,
    ) -> Reply<pb::LadderListBotsResponse> {
        let caller = self.caller(&request).await?;
        let bots = self.ladder.bots(&caller).await.map_err(status_of)?;
        Ok(Response::new(pb::LadderListBotsResponse {
            bots: bots.into_iter().map(bot_pb).collect(),
        }))
    }

    async fn show_bot(
        &self,
        request: Request<pb::LadderShowBotRequest>,
    ) -> Reply<pb::LadderShowBotResponse> {
        let caller = self.caller(&request).await?;
        let name = required("name", &request.get_ref().name)?;
        let bot = self.ladder.bot(&caller, name).await.map_err(status_of)?;
        Ok(Response::new(pb::LadderShowBotResponse {
            bot: Some(bot_pb(bot)),
        }))
    }

    async fn enqueue(
        &self,
        request: Request<pb::LadderEnqueueRequest>,
    ) -> Reply<pb::LadderEnqueueResponse> {
        let caller = self.caller(&request).await?;
        let body = request.get_ref();
        let bot = required("bot", &body.bot)?;
        if body.stake < 1 {
            return Err(Status::invalid_argument("stake must be at least 1 credit"));
        }
        let entry = self
            .ladder
            .enqueue(&caller, bot, body.stake)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderEnqueueResponse {
            entry: Some(pb::LadderQueueEntry {
                bot: entry.bot_name,
                weight_class: entry.class.name().to_owned(),
                weight_class_enum: class_to_proto(entry.class) as i32,
                stake: entry.stake,
                enqueued_ms: entry.enqueued_ms,
                waves_waited: entry.waves_waited,
            }),
        }))
    }

    async fn leave_queue(
        &self,
        request: Request<pb::LadderLeaveQueueRequest>,
    ) -> Reply<pb::LadderLeaveQueueResponse> {
        let caller = self.caller(&request).await?;
        let bot = required("bot", &request.get_ref().bot)?;
        self.ladder.dequeue(&caller, bot).await.map_err(status_of)?;
        Ok(Response::new(pb::LadderLeaveQueueResponse {}))
    }

    async fn activate_bot(
        &self,
        request: Request<pb::LadderActivateBotRequest>,
    ) -> Reply<pb::LadderActivateBotResponse> {
        let caller = self.caller(&request).await?;
        let body = request.get_ref();
        let bot = required("bot", &body.bot)?;
        if body.stake < 1 {
            return Err(Status::invalid_argument("stake must be at least 1 credit"));
        }
        let bot = self
            .ladder
            .activate(&caller, bot, body.stake)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderActivateBotResponse {
            bot: Some(bot_pb(bot)),
        }))
    }

    async fn deactivate_bot(
        &self,
        request: Request<pb::LadderDeactivateBotRequest>,
    ) -> Reply<pb::LadderDeactivateBotResponse> {
        let caller = self.caller(&request).await?;
        let bot = required("bot", &request.get_ref().bot)?;
        let bot = self
            .ladder
            .deactivate(&caller, bot)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderDeactivateBotResponse {
            bot: Some(bot_pb(bot)),
        }))
    }

    async fn edit_bot(
        &self,
        request: Request<pb::LadderEditBotRequest>,
    ) -> Reply<pb::LadderEditBotResponse> {
        let caller = self.caller(&request).await?;
        let body = request.get_ref();
        let bot = required("bot", &body.bot)?;
        let edit = ProfileEdit {
            description: body.description.clone(),
            author: body.author.clone(),
            source_url: body.source_url.clone(),
        };
        let bot = self
            .ladder
            .edit_profile(&caller, bot, &edit)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderEditBotResponse {
            bot: Some(bot_pb(bot)),
        }))
    }

    async fn status(
        &self,
        request: Request<pb::LadderStatusRequest>,
    ) -> Reply<pb::LadderStatusResponse> {
        let caller = self.caller(&request).await?;
        let status = self.ladder.status(&caller).await.map_err(status_of)?;
        Ok(Response::new(status_pb(status)))
    }

    async fn list_matches(
        &self,
        request: Request<pb::LadderListMatchesRequest>,
    ) -> Reply<pb::LadderListMatchesResponse> {
        let caller = self.caller(&request).await?;
        let body = request.get_ref();
        let state = optional(&body.state)
            .map(MatchState::from_name)
            .transpose()
            .map_err(status_of)?;
        let matches = self
            .ladder
            .matches(&caller, state, optional(&body.bot))
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderListMatchesResponse {
            matches: matches
                .into_iter()
                .map(|game| match_pb(game, &caller))
                .collect(),
        }))
    }

    async fn show_match(
        &self,
        request: Request<pb::LadderShowMatchRequest>,
    ) -> Reply<pb::LadderShowMatchResponse> {
        let caller = self.caller(&request).await?;
        let id = required("id", &request.get_ref().id)?;
        let game = self.ladder.game(&caller, id).await.map_err(status_of)?;
        Ok(Response::new(pb::LadderShowMatchResponse {
            r#match: Some(match_pb(game, &caller)),
        }))
    }

    async fn match_logs(
        &self,
        request: Request<pb::LadderMatchLogsRequest>,
    ) -> Reply<pb::LadderMatchLogsResponse> {
        let caller = self.caller(&request).await?;
        let id = required("id", &request.get_ref().id)?;
        let (game, logs) = self
            .ladder
            .match_logs(&caller, id)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderMatchLogsResponse {
            id: game.id.clone(),
            sides: logs
                .into_iter()
                .map(|side| pb::LadderSideLogs {
                    side: side.side.name().to_owned(),
                    bot: game.sides[side.side.index()].bot_name.clone(),
                    exchanges: side
                        .exchanges
                        .into_iter()
                        .map(|exchange| pb::LadderExchangeLog {
                            round: u32::from(exchange.round),
                            exchange: u32::from(exchange.exchange),
                            lines: exchange.lines,
                            truncated: exchange.truncated,
                        })
                        .collect(),
                })
                .collect(),
        }))
    }

    async fn match_transcript(
        &self,
        request: Request<pb::LadderMatchTranscriptRequest>,
    ) -> Reply<pb::LadderMatchTranscriptResponse> {
        let caller = self.caller(&request).await?;
        let body = request.get_ref();
        let id = required("id", &body.id)?;
        let bot = (!body.bot.is_empty()).then_some(body.bot.as_str());
        let transcript = self
            .ladder
            .match_transcript(&caller, id, bot)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderMatchTranscriptResponse {
            id: transcript.match_id.clone(),
            decisions: u32::try_from(transcript.decisions.len()).unwrap_or(u32::MAX),
            transcript_json: transcript.to_json_pretty().into_bytes(),
        }))
    }

    async fn start_season(
        &self,
        request: Request<pb::LadderStartSeasonRequest>,
    ) -> Reply<pb::LadderStartSeasonResponse> {
        let caller = self.caller(&request).await?;
        let name = required("name", &request.get_ref().name)?;
        let season = self
            .ladder
            .start_season(&caller, name)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderStartSeasonResponse {
            season: Some(season_pb(season)),
        }))
    }

    async fn end_season(
        &self,
        request: Request<pb::LadderEndSeasonRequest>,
    ) -> Reply<pb::LadderEndSeasonResponse> {
        let caller = self.caller(&request).await?;
        let season = self.ladder.end_season(&caller).await.map_err(status_of)?;
        Ok(Response::new(pb::LadderEndSeasonResponse {
            season: Some(season_pb(season)),
        }))
    }

    async fn standings(
        &self,
        request: Request<pb::LadderStandingsRequest>,
    ) -> Reply<pb::LadderStandingsResponse> {
        let caller = self.caller(&request).await?;
        let body = request.get_ref();
        if body.season_id < 0 {
            return Err(Status::invalid_argument(
                "season_id must be 0 or a season id",
            ));
        }
        let class = optional(&body.weight_class)
            .map(model::class_from_name)
            .transpose()
            .map_err(status_of)?;
        let choice = match (body.season_id, optional(&body.season_name)) {
            (0, None) => SeasonChoice::Current,
            (id, None) => SeasonChoice::Id(id),
            (0, Some(name)) => SeasonChoice::Name(printable("season_name", name)?.to_owned()),
            (_, Some(_)) => {
                return Err(Status::invalid_argument(
                    "set season_id or season_name, not both",
                ));
            }
        };
        let (season, standings) = self
            .ladder
            .standings_of(&caller, &choice, class)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderStandingsResponse {
            season: Some(season_pb(season)),
            standings: standings.into_iter().map(standing_pb).collect(),
        }))
    }

    async fn set_rake(
        &self,
        request: Request<pb::LadderSetRakeRequest>,
    ) -> Reply<pb::LadderSetRakeResponse> {
        let caller = self.caller(&request).await?;
        self.ladder
            .set_rake(&caller, request.get_ref().rake_bp)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderSetRakeResponse {}))
    }

    async fn balance(
        &self,
        request: Request<pb::LadderBalanceRequest>,
    ) -> Reply<pb::LadderBalanceResponse> {
        let caller = self.caller(&request).await?;
        let account = optional(&request.get_ref().account);
        let available = self
            .ladder
            .balance(&caller, account)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LadderBalanceResponse {
            account: account.unwrap_or(&caller.name).to_owned(),
            available,
        }))
    }

    async fn check_ledger(
        &self,
        request: Request<pb::LadderCheckLedgerRequest>,
    ) -> Reply<pb::LadderCheckLedgerResponse> {
        let caller = self.caller(&request).await?;
        let checked = self.ladder.ledger_check(&caller).await.map_err(status_of)?;
        Ok(Response::new(match checked {
            Ok(report) => pb::LadderCheckLedgerResponse {
                ok: true,
                violation: String::new(),
                accounts: report.accounts,
                transfers: report.transfers,
                pending_unresolved: report.pending_unresolved,
                credits_in_circulation: report.credits_in_circulation,
                house_credits: report.house_credits,
            },
            Err(violation) => pb::LadderCheckLedgerResponse {
                ok: false,
                violation: violation.to_string(),
                ..Default::default()
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The enums beside the names say the same thing, in every state.
    #[test]
    fn a_matchs_enums_agree_with_its_names() {
        use duel_rules::WeightClass;
        let side = |name: &str| model::MatchSide {
            bot_id: format!("id-{name}"),
            bot_name: name.to_owned(),
            version: 1,
            owner_id: "alice".to_owned(),
            stake: 10,
        };
        let cases = [
            (
                MatchState::Queued,
                None,
                pb::LadderMatchState::Queued,
                pb::Winner::Unspecified,
            ),
            (
                MatchState::Running,
                None,
                pb::LadderMatchState::Running,
                pb::Winner::Unspecified,
            ),
            (
                MatchState::Settled,
                Some(Winner::A),
                pb::LadderMatchState::Settled,
                pb::Winner::A,
            ),
            (
                MatchState::Settled,
                Some(Winner::B),
                pb::LadderMatchState::Settled,
                pb::Winner::B,
            ),
            (
                MatchState::Settled,
                Some(Winner::Draw),
                pb::LadderMatchState::Settled,
                pb::Winner::Draw,
            ),
            (
                MatchState::Voided,
                None,
                pb::LadderMatchState::Voided,
                pb::Winner::Unspecified,
            ),
        ];
        let user = |role| User {
            id: "u1".to_owned(),
            name: "alice".to_owned(),
            role,
        };
        let (owner, operator) = (user(Role::Owner), user(Role::Operator));
        for (state, winner, state_pb, winner_pb) in cases {
            for class in [WeightClass::Light, WeightClass::Middle, WeightClass::Heavy] {
                let game = Match {
                    id: "m1".to_owned(),
                    season_id: 1,
                    class,
                    ruleset: "1.0.0".to_owned(),
                    budget: 1_000,
                    rake_bp: 0,
                    seed: 7,
                    opening_exchanges: 0,
                    sides: [side("counter"), side("block")],
                    state,
                    attempts: 1,
                    accepted_ms: 5,
                    finished_ms: None,
                    winner,
                    replay_path: Some("replays/m1.json".to_owned()),
                    note: None,
                    last_failure: None,
                    repeat_of: None,
                    not_rated: None,
                };
                let sent = match_pb(game.clone(), &owner);
                assert_eq!(sent.replay_path, "", "an owner never sees the storage path");
                assert_eq!(match_pb(game, &operator).replay_path, "replays/m1.json");
                assert_eq!(sent.state, state.name());
                assert_eq!(sent.state_enum, state_pb as i32, "{state:?}");
                assert_eq!(sent.winner, winner.map(Winner::name).unwrap_or_default());
                assert_eq!(sent.winner_enum, winner_pb as i32, "{winner:?}");
                assert_eq!(sent.weight_class, class.name());
                assert_eq!(sent.weight_class_enum, class_to_proto(class) as i32);
            }
        }
    }

    /// `not_rated`, a bot's `play` and a version's `kind` as enums say what
    /// their strings say.
    #[test]
    fn not_rated_play_and_kind_enums_agree_with_their_names() {
        for (name, sent) in [
            (None, pb::LadderNotRated::Unspecified),
            (Some("repeat"), pb::LadderNotRated::Repeat),
            (Some("pair_rated"), pb::LadderNotRated::PairRated),
            (
                Some("a reason of the future"),
                pb::LadderNotRated::Unspecified,
            ),
        ] {
            assert_eq!(not_rated_to_proto(name), sent, "{name:?}");
        }
        let versions = [BotKind::Builtin, BotKind::Wasm, BotKind::Endpoint]
            .into_iter()
            .enumerate()
            .map(|(index, kind)| model::BotVersion {
                version: index as i64 + 1,
                kind,
                spec: format!("spec-{index}"),
                digest: format!("sha256:{index}"),
                created_ms: 5,
            })
            .collect::<Vec<_>>();
        let plays = [
            (Play::Inactive, pb::LadderBotPlay::Inactive),
            (
                Play::Active {
                    stake: 10,
                    since_ms: 5,
                },
                pb::LadderBotPlay::Active,
            ),
            (
                Play::Paused {
                    stake: 10,
                    since_ms: 5,
                    reason: "balance 0 is below the stake 10".to_owned(),
                },
                pb::LadderBotPlay::Paused,
            ),
        ];
        for (play, play_pb) in plays {
            let bot = Bot {
                id: "b1".to_owned(),
                name: "counter".to_owned(),
                owner_id: "u1".to_owned(),
                owner_name: "alice".to_owned(),
                class: duel_rules::WeightClass::Light,
                current_version: 3,
                versions: versions.clone(),
                play: play.clone(),
                profile: Default::default(),
            };
            let sent = bot_pb(bot);
            assert_eq!(sent.play, play.state_name());
            assert_eq!(sent.play_enum, play_pb as i32, "{play:?}");
            for (version, kind) in sent.versions.iter().zip([
                pb::LadderBotKind::Builtin,
                pb::LadderBotKind::Wasm,
                pb::LadderBotKind::Endpoint,
            ]) {
                assert_eq!(version.kind_enum, kind as i32, "{}", version.kind);
            }
            let kinds: Vec<&str> = sent.versions.iter().map(|v| v.kind.as_str()).collect();
            assert_eq!(kinds, ["builtin", "wasm", "endpoint"]);
        }
    }

    #[test]
    fn names_and_ids_refuse_control_characters() {
        for bad in [
            "a\0b",
            "line\nbreak",
            "esc\u{1b}[31m",
            "tab\there",
            "del\u{7f}",
        ] {
            let status = required("name", bad).expect_err(bad);
            assert_eq!(status.code(), tonic::Code::InvalidArgument, "{bad:?}");
            assert!(status.message().contains("control characters"), "{bad:?}");
        }
        for bad in ["evil\u{202e}txt.exe", "a\u{2066}b", "mark\u{200f}"] {
            let status = required("name", bad).expect_err(bad);
            assert_eq!(status.code(), tonic::Code::InvalidArgument, "{bad:?}");
            assert!(status.message().contains("bidirectional"), "{bad:?}");
        }
        // The names themselves are letters, digits, '-', '_' and '.' only.
        assert!(duel_ladder_core::model::check_name("bot", "evil\u{202e}txt").is_err());
        assert_eq!(
            required("name", "  plain-name_1 ").ok(),
            Some("plain-name_1")
        );
        assert_eq!(required("name", "ünïcode").ok(), Some("ünïcode"));
        let missing = required("transfer_id", "  ").expect_err("blank");
        assert_eq!(missing.message(), "transfer_id is required");
    }

    #[test]
    fn internal_errors_reach_clients_as_a_correlation_id_only() {
        let secret = "relation \"transfers\" violates constraint pk_secret_detail";
        for error in [
            LadderError::Corrupt(secret.to_owned()).into(),
            ServiceError::Socket {
                what: "gRPC",
                source: std::io::Error::other(secret),
            },
            LadderError::Database(sqlx::Error::Protocol(secret.to_owned())).into(),
        ] {
            let status = status_of(error);
            assert_eq!(status.code(), tonic::Code::Internal);
            assert!(!status.message().contains("pk_secret_detail"), "{status:?}");
            assert!(status.message().contains("correlation id"), "{status:?}");
        }
        // A quota names itself to the client.
        let status = status_of(LadderError::Quota(
            "bot versions per owner: alice has 2 of 2".to_owned(),
        ));
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert!(status.message().contains("alice has 2 of 2"));
        // Errors about the request itself keep their words.
        let status = status_of(LadderError::NotFound("no bot named x".to_owned()));
        assert_eq!(status.code(), tonic::Code::NotFound);
        assert!(status.message().contains("no bot named x"));
    }
}
