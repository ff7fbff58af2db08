//! Fuzzes the proto→domain conversions of `referee serve` and of endpoint bots'
//! answers (referee/src/grpc/convert.rs, inference.rs) on bytes off the wire.
//! None may panic; an accepted match request holds specs that print and parse
//! back unchanged and a wall clock within the referee's bounds.

#![no_main]

use duel_proto::v1 as pb;
use duel_referee::grpc::convert::{self, MatchRequest};
use duel_referee::limits::{DECISION_WALL_CLOCK, MIN_WALL_CLOCK};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(request) = pb::RunMatchRequest::decode(bytes)
        && let Ok(request) = MatchRequest::try_from(request)
    {
        for spec in &request.specs {
            let printed = spec.to_string();
            assert_eq!(
                duel_referee::BotSpec::parse(&printed).ok().as_ref(),
                Some(spec),
                "{printed:?}"
            );
        }
        assert!(request.wall_clock >= MIN_WALL_CLOCK && request.wall_clock <= DECISION_WALL_CLOCK);
    }
    if let Ok(response) = pb::DecideResponse::decode(bytes) {
        let _ = convert::action_from_proto(response.action);
    }
    if let Ok(request) = pb::CompleteRequest::decode(bytes) {
        let _ = duel_referee::grpc::inference::messages_from_proto(request.messages);
    }
    if bytes.len() >= 8 {
        let value = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let ms = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let _ = convert::action_from_proto(value);
        let _ = convert::class_from_proto(value);
        if let Ok(wall_clock) = convert::wall_clock_from_ms(ms) {
            assert!(wall_clock >= MIN_WALL_CLOCK && wall_clock <= DECISION_WALL_CLOCK);
        }
    }
});
