//! `duel.v1.Referee`: thin handlers that validate, convert, call [`Matches`] and
//! map errors through [`ServiceError`].

use std::pin::Pin;

use duel_proto::v1 as pb;
use duel_proto::v1::referee_server::Referee;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::grpc::convert::{self, MatchRequest};
use crate::grpc::matches::{MatchEnd, Matches};
use crate::grpc::status::ServiceError;
use crate::limits::WATCH_BUFFER_EVENTS;

#[derive(Clone, Debug)]
pub struct RefereeService {
    matches: Matches,
}

impl RefereeService {
    pub fn new(matches: Matches) -> RefereeService {
        RefereeService { matches }
    }
}

fn check_match_id(match_id: &str) -> Result<(), ServiceError> {
    if uuid::Uuid::parse_str(match_id).is_err() {
        return Err(ServiceError::InvalidArgument(format!(
            "match_id {:?} is not a UUID",
            match_id.chars().take(64).collect::<String>()
        )));
    }
    Ok(())
}

fn end_event(end: &MatchEnd) -> pb::MatchEvent {
    let event = match end {
        MatchEnd::Finished(replay) => {
            pb::match_event::Event::Finished(convert::match_result_to_proto(&replay.result))
        }
        MatchEnd::Aborted(reason) => pb::match_event::Event::Aborted(reason.clone()),
    };
    pb::MatchEvent { event: Some(event) }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::MatchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl Referee for RefereeService {
    async fn run_match(
        &self,
        request: Request<pb::RunMatchRequest>,
    ) -> Result<Response<pb::RunMatchResponse>, Status> {
        let request =
            MatchRequest::try_from(request.into_inner()).map_err(ServiceError::InvalidArgument)?;
        let detach = request.detach;
        let live = self.matches.start(request).await?;
        let match_id = live.started.match_id.clone();
        if detach {
            return Ok(Response::new(pb::RunMatchResponse {
                match_id,
                result: None,
                replay_json: String::new(),
            }));
        }
        match live.wait_end().await {
            MatchEnd::Finished(replay) => Ok(Response::new(pb::RunMatchResponse {
                match_id,
                result: Some(convert::match_result_to_proto(&replay.result)),
                replay_json: replay.to_json_pretty(),
            })),
            MatchEnd::Aborted(reason) => {
                Err(Status::aborted(format!("match {match_id}: {reason}")))
            }
        }
    }

    type WatchMatchStream = EventStream;

    async fn watch_match(
        &self,
        request: Request<pb::WatchMatchRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let match_id = request.into_inner().match_id;
        check_match_id(&match_id)?;
        let live = self.matches.get(&match_id).ok_or_else(|| {
            ServiceError::NotFound(format!("no match {match_id} on this referee"))
        })?;
        let (sender, receiver) = tokio::sync::mpsc::channel(WATCH_BUFFER_EVENTS);
        tokio::spawn(async move {
            let mut changes = live.subscribe();
            let started = pb::MatchEvent {
                event: Some(pb::match_event::Event::Started(live.started.clone())),
            };
            if sender.send(Ok(started)).await.is_err() {
                return;
            }
            let mut sent = 0;
            loop {
                changes.borrow_and_update();
                let (events, end) = live.events_since(sent);
                for event in events {
                    sent += 1;
                    let event = pb::MatchEvent {
                        event: Some(pb::match_event::Event::Exchange(event)),
                    };
                    if sender.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
                if let Some(end) = end {
                    let _ = sender.send(Ok(end_event(&end))).await;
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(receiver))))
    }

    async fn get_replay(
        &self,
        request: Request<pb::GetReplayRequest>,
    ) -> Result<Response<pb::GetReplayResponse>, Status> {
        let match_id = request.into_inner().match_id;
        check_match_id(&match_id)?;
        let live = self.matches.get(&match_id).ok_or_else(|| {
            ServiceError::NotFound(format!("no match {match_id} on this referee"))
        })?;
        match live.end_state() {
            Some(MatchEnd::Finished(replay)) => Ok(Response::new(pb::GetReplayResponse {
                replay_json: replay.to_json_pretty(),
            })),
            Some(MatchEnd::Aborted(reason)) => Err(ServiceError::NotFound(format!(
                "match {match_id} has no replay: {reason}"
            ))
            .into()),
            None => {
                Err(ServiceError::NotFinished(format!("match {match_id} is still running")).into())
            }
        }
    }
}
