//! What a fighter is built with ([`BotContext`]), and the builders of built-in
//! and endpoint fighters. The match host ([`crate::host`]) is the one factory:
//! it calls these, and builds WASM fighters through its sandboxes.

use std::time::Duration;

use duel_rules::Side;

use crate::bot::Bot;
use crate::builtin::BuiltinBot;
use crate::endpoint::{EndpointBot, EndpointPolicy, InferenceGrant};
use crate::error::MatchError;
use crate::record::MatchConfig;
use crate::spec::BuiltinSpec;
use duel_gateway::credentials::Credentials;
use duel_gateway::meter::FighterMeter;
use duel_gateway::tls::Trust;

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
        }
    }
}

/// A built-in fighter, seeded by the match.
pub(crate) fn builtin_bot(spec: &BuiltinSpec, context: &BotContext) -> Box<dyn Bot> {
    Box::new(BuiltinBot::new(spec.clone(), context.seed, context.side))
}

/// An endpoint fighter: the channel prepared, its `Hello` asked.
pub(crate) async fn endpoint_bot(
    url: &str,
    context: &BotContext,
    trust: &Trust,
    policy: EndpointPolicy,
) -> Result<Box<dyn Bot>, MatchError> {
    let grant = context.inference.as_ref().map(|link| InferenceGrant {
        url: link.url.clone(),
        credentials: link.credentials.clone(),
        match_id: context.match_id.clone(),
        side: context.side,
    });
    let bot = EndpointBot::connect(
        url,
        context.wall_clock,
        context.meter.clone(),
        grant,
        trust,
        policy,
    )
    .await?;
    Ok(Box::new(bot))
}

/// What the sandbox needs of a fighter's context.
pub(crate) fn sandbox_context(context: &BotContext) -> duel_sandbox::BotContext {
    duel_sandbox::BotContext {
        match_id: context.match_id.clone(),
        seed: context.seed,
        side: context.side,
    }
}
