//! `ladder serve` (the API, workers, waves, and the public site and Duel TV
//! over HTTP) and `ladder worker` (workers only): flags into the service's
//! configuration, the site mounted beside the replay service, then run until
//! ctrl-c or SIGTERM.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use duel_ladder::gate::ApiLimits;
use duel_ladder::model::OwnerQuotas;
use duel_ladder::serve::{MountSite, MountedSite, ServeConfig, SiteParts, WorkConfig};
use duel_ladder_site::transcripts::FormRate;
use duel_ladder_site::tv::TvConfig;
use duel_plumbing::{Outcome, Shutdown};
use duel_referee::HostConfig;
use duel_replays::SigningKey;

use crate::cli::{LimitArgs, PlayArgs, ServeArgs, WorkerArgs};
use duel_ladder::reveal::RevealPolicy;

pub async fn serve(args: ServeArgs) -> Result<Outcome> {
    let tv = TvConfig::paced(Duration::from_millis(args.tv_exchange_ms));
    let config = ServeConfig {
        db_url: args.db.clone(),
        listen: args.listen,
        http: args.http,
        replays: args.play.replays.clone(),
        signing_key: signing_key(&args.play)?,
        workers: args.workers,
        wave_interval: Duration::from_millis(args.wave_interval_ms.max(1)),
        match_interval: Duration::from_millis(args.match_interval_ms),
        ranked_openings: Some(args.ranked_openings),
        allow_private_endpoints: args.play.allow_private_endpoints,
        host: host_config(&args.play)?,
        public_url: args.public_url,
        api: api_limits(&args.limits),
        quotas: quotas(&args.limits),
        max_concurrent_compiles: args.limits.max_concurrent_compiles,
        http_limits: args.limits.http.limits(),
        grpc_limits: args.grpc_limits.limits(),
        public_site: Some(public_site(
            tv,
            args.reveal_transcripts,
            FormRate {
                per_second: args.limits.calls_per_second_per_peer,
                burst: args.limits.call_burst_per_peer,
            },
        )),
        log_limits: args.play.log_limits(),
        transcript_limits: args.play.transcript_limits(),
        lease_ms: args.play.lease_ms(),
        reveal: args.reveal_transcripts,
    };
    let shutdown = Shutdown::install()?;
    duel_ladder::serve::serve(config, shutdown.receiver(), None)
        .await
        .with_context(|| format!("serving {} on {}", args.db, args.listen))?;
    Ok(Outcome::Done)
}

pub async fn worker(args: WorkerArgs) -> Result<Outcome> {
    let config = WorkConfig {
        db_url: args.db.clone(),
        replays: args.play.replays.clone(),
        signing_key: signing_key(&args.play)?,
        workers: args.workers,
        allow_private_endpoints: args.play.allow_private_endpoints,
        host: host_config(&args.play)?,
        inference_listen: args.inference_listen,
        public_url: args.public_url,
        metrics_listen: args.metrics_listen,
        grpc_limits: args.grpc_limits.limits(),
        log_limits: args.play.log_limits(),
        transcript_limits: args.play.transcript_limits(),
        lease_ms: args.play.lease_ms(),
    };
    let shutdown = Shutdown::install()?;
    duel_ladder::serve::work(config, shutdown.receiver())
        .await
        .with_context(|| format!("working on {}", args.db))?;
    Ok(Outcome::Done)
}

/// The public site and Duel TV, paced by `tv`, mounted beside the replay
/// service of `ladder serve --http`; transcripts public as `reveal` says, the
/// owner's form limited per client to `form_rate` (the API's rate).
pub fn public_site(tv: TvConfig, reveal: RevealPolicy, form_rate: FormRate) -> MountSite {
    MountSite(Arc::new(move |parts: SiteParts| {
        let (router, broadcast) = duel_ladder_site::mount(
            parts.reads,
            parts.replays,
            parts.live,
            parts.shutdown,
            tv,
            reveal,
            form_rate,
        );
        MountedSite {
            router,
            tasks: vec![broadcast],
        }
    }))
}

fn signing_key(play: &PlayArgs) -> Result<Arc<SigningKey>> {
    let key = duel_plumbing::signing_key::load(play.signing_key.as_deref(), "ladder")?;
    Ok(Arc::new(key))
}

/// The match host's configuration from the model flags and the environment
/// (the model key, extra TLS roots, the compiled-bot cache): the one place the
/// ladder binary reads them.
fn host_config(play: &PlayArgs) -> Result<HostConfig> {
    Ok(duel_referee::env::host_config(
        duel_referee::env::ModelFlags {
            models: play.models.as_deref(),
            model_url: play.model_url.as_deref(),
            model: play.model.as_deref(),
        },
    )?)
}

fn api_limits(limits: &LimitArgs) -> ApiLimits {
    ApiLimits {
        calls_per_second_per_peer: limits.calls_per_second_per_peer,
        call_burst_per_peer: limits.call_burst_per_peer,
        calls_per_second_per_token: limits.calls_per_second_per_token,
        call_burst_per_token: limits.call_burst_per_token,
        max_concurrent_uploads: limits.max_concurrent_uploads,
    }
}

fn quotas(limits: &LimitArgs) -> OwnerQuotas {
    OwnerQuotas {
        max_bot_versions: limits.max_versions_per_owner,
        max_stored_bytes: limits.max_stored_bytes_per_owner,
        compile_seconds_per_day: limits.compile_seconds_per_day,
    }
}
