//! Fuzzes the ladder's request checks on decoded requests, as its gRPC service
//! applies them before touching the database: required text fields, names,
//! weight classes, bot sources (built-in specs through `BotSpec::parse`) and the
//! endpoint URL policy. None may panic, and what passes holds no control
//! characters and no private address under the public policy.

#![no_main]

use duel_ladder::grpc::{registration, required};
use duel_ladder::ladder::Registration;
use duel_ladder::model::{check_name, class_from_name};
use duel_ladder::validate::check_endpoint_url;
use duel_proto::v1 as pb;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fn checked_text(field: &str, value: &str) {
    if let Ok(text) = required(field, value) {
        assert!(
            !text.is_empty() && !text.chars().any(char::is_control),
            "{text:?}"
        );
    }
}

fn check_source(source: Option<pb::LadderBotSource>) {
    match registration(source) {
        Ok(Registration::Builtin(spec)) => {
            let _ = duel_referee::BotSpec::parse(&spec);
        }
        Ok(Registration::Endpoint(url)) => {
            let public = check_endpoint_url(&url, false);
            let private = check_endpoint_url(&url, true);
            // The public policy is the stricter one.
            assert!(public.is_err() || private.is_ok(), "{url:?}");
            if public.is_ok() {
                let host =
                    duel_referee::spec::endpoint_host(&url).expect("a checked URL has a host");
                if let Ok(address) = host.parse::<std::net::IpAddr>() {
                    assert!(duel_referee::address_policy::is_public(address), "{url:?}");
                }
            }
        }
        Ok(_) | Err(_) => {}
    }
}

fuzz_target!(|bytes: &[u8]| {
    if let Ok(request) = pb::LadderRegisterBotRequest::decode(bytes) {
        checked_text("name", &request.name);
        let _ = check_name("bot", &request.name);
        let _ = class_from_name(&request.weight_class);
        check_source(request.source);
    }
    if let Ok(request) = pb::LadderNewBotVersionRequest::decode(bytes) {
        checked_text("name", &request.name);
        check_source(request.source);
    }
    if let Ok(request) = pb::LadderGrantCreditsRequest::decode(bytes) {
        checked_text("owner", &request.owner);
        checked_text("transfer_id", &request.transfer_id);
    }
    if let Ok(request) = pb::LadderCreateOwnerRequest::decode(bytes) {
        checked_text("name", &request.name);
        let _ = check_name("account", &request.name);
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = check_endpoint_url(text, false);
        let _ = check_endpoint_url(text, true);
    }
});
