//! Builds the fighter a bot spec names, for every command and service alike.

use duel_rules::Side;

use crate::bot::Bot;
use crate::builtin::BuiltinBot;
use crate::error::RefereeError;
use crate::spec::BotSpec;

/// What a bot needs to know to be built for one side of one match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotContext {
    pub seed: u64,
    pub side: Side,
}

/// A fresh fighter for one match. WASM and endpoint bots answer with a clear
/// error until this build includes their hosts.
pub fn make_bot(spec: &BotSpec, context: &BotContext) -> Result<Box<dyn Bot>, RefereeError> {
    match spec {
        BotSpec::Builtin(builtin) => Ok(Box::new(BuiltinBot::new(
            builtin.clone(),
            context.seed,
            context.side,
        ))),
        BotSpec::Wasm(path) => {
            std::fs::metadata(path).map_err(|error| {
                RefereeError::Spec(format!("cannot read bot {}: {error}", path.display()))
            })?;
            Err(RefereeError::Unsupported(format!(
                "bot {}: WASM bots are not supported by this build yet (use builtin: bots)",
                path.display()
            )))
        }
        BotSpec::Endpoint(url) => Err(RefereeError::Unsupported(format!(
            "bot {url}: endpoint bots are not supported by this build yet (use builtin: bots)"
        ))),
    }
}
