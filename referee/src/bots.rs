//! The bot factory: builds the fighter a spec names, the same way for
//! `referee local`, `referee serve` and ladder workers.

use std::time::Duration;

use duel_rules::Side;

use crate::bot::Bot;
use crate::builtin::BuiltinBot;
use crate::credentials::Credentials;
use crate::endpoint::{EndpointBot, InferenceGrant};
use crate::error::RefereeError;
use crate::meter::FighterMeter;
use crate::record::MatchConfig;
use crate::spec::BotSpec;

/// Where endpoint bots of this process reach `duel.v1.Inference`.
#[derive(Clone, Debug)]
pub struct InferenceLink {
    /// The URL endpoint bots are told (`http://127.0.0.1:50051`).
    pub url: String,
    pub credentials: Credentials,
}

/// Everything a bot is built with, for one fighter of one match.
#[derive(Clone, Debug)]
pub struct BotContext {
    pub seed: u64,
    pub side: Side,
    pub match_id: String,
    pub wall_clock: Duration,
    /// This fighter's token account (shared with the WASM `model` import).
    pub meter: FighterMeter,
    /// Absent when no Inference service runs (endpoint bots then get no credential).
    pub inference: Option<InferenceLink>,
    /// Set by runners that never play more than this many matches at once in this
    /// process: WASM instances then come from a pool sized for them.
    pub concurrent_matches: Option<usize>,
}

impl BotContext {
    pub fn new(
        config: &MatchConfig,
        side: Side,
        meter: FighterMeter,
        inference: Option<InferenceLink>,
    ) -> BotContext {
        BotContext {
            seed: config.seed,
            side,
            match_id: config.match_id.clone(),
            wall_clock: config.decision_wall_clock,
            meter,
            inference,
            concurrent_matches: None,
        }
    }
}

/// Builds the bot `spec` names.
pub async fn make_bot(spec: &BotSpec, context: &BotContext) -> Result<Box<dyn Bot>, RefereeError> {
    match spec {
        BotSpec::Builtin(builtin) => Ok(Box::new(BuiltinBot::new(
            builtin.clone(),
            context.seed,
            context.side,
        ))),
        BotSpec::Wasm(path) => {
            let loaded =
                crate::wasm::load_for(path, context.wall_clock, context.concurrent_matches).await?;
            Ok(Box::new(crate::wasm::WasmBot::new(
                path,
                loaded,
                sandbox_context(context),
                context.meter.clone(),
            )))
        }
        BotSpec::Endpoint(url) => {
            let grant = context.inference.as_ref().map(|link| InferenceGrant {
                url: link.url.clone(),
                credentials: link.credentials.clone(),
                match_id: context.match_id.clone(),
                side: context.side,
            });
            let bot =
                EndpointBot::connect(url, context.wall_clock, context.meter.clone(), grant).await?;
            Ok(Box::new(bot))
        }
    }
}

/// Builds a WASM fighter from component bytes kept elsewhere (a ladder keeps
/// them by digest), through the same sandbox, caches and meter as [`make_bot`].
/// `name` and `spec` are what the replay shows.
pub async fn make_wasm_bot(
    bytes: Vec<u8>,
    name: String,
    spec: Option<String>,
    context: &BotContext,
) -> Result<Box<dyn Bot>, RefereeError> {
    let loaded = crate::wasm::load_bytes(bytes, context.wall_clock).await?;
    Ok(Box::new(crate::wasm::WasmBot::named(
        name,
        spec,
        loaded,
        sandbox_context(context),
        context.meter.clone(),
    )))
}

fn sandbox_context(context: &BotContext) -> duel_sandbox::BotContext {
    duel_sandbox::BotContext {
        match_id: context.match_id.clone(),
        seed: context.seed,
        side: context.side,
    }
}
