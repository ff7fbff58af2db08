//! The model catalogue and the upstreams behind it: which models a bot may
//! name (`--models PATH`, `[[model]]` tables, or the one-model shorthand
//! `--model-url`/`--model`), where each is forwarded (an OpenAI-compatible
//! chat-completions server, or the built-in deterministic `builtin:house`),
//! and what each costs. The budget is the same o200k count whichever model
//! is called: prices are shown, never charged.

use std::fmt;
use std::sync::Arc;

use duel_replays::ModelPrice;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::GatewayError;
use crate::limits::{
    MAX_CATALOGUE_BYTES, MAX_CATALOGUE_MODELS, MAX_MODEL_NAME_BYTES, MAX_MODEL_RESPONSE_BYTES,
    MAX_PRICE_USD_PER_MTOK, MODEL_CALL_TIMEOUT,
};
use crate::tls::Trust;

/// The environment variable holding the one-model shorthand's API key (never
/// a flag, never logged); the binaries read it, never this library.
pub const MODEL_API_KEY_ENV: &str = "DUEL_MODEL_API_KEY";

/// One chat message, as forwarded to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// The `url` of the built-in deterministic model (no network, no key).
pub const HOUSE_URL: &str = "builtin:house";

/// One `[[model]]` table of a catalogue file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// What bots send as `model`.
    pub name: String,
    /// The upstream's base URL (`http://127.0.0.1:8081/v1`) or chat-completions
    /// URL, or [`HOUSE_URL`].
    pub url: String,
    /// The name sent upstream (default: `name`).
    #[serde(default)]
    pub upstream_model: Option<String>,
    /// The environment variable holding this upstream's API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub input_usd_per_mtok: Option<f64>,
    #[serde(default)]
    pub output_usd_per_mtok: Option<f64>,
    /// Used when a request names no model (at most one entry).
    #[serde(default)]
    pub default: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogueFile {
    #[serde(default)]
    model: Vec<ModelEntry>,
}

/// A checked list of models: names unique, at most one default, URLs and
/// prices usable. Pure data: nothing is resolved or dialled here.
#[derive(Clone, Debug, PartialEq)]
pub struct Catalogue {
    entries: Vec<ModelEntry>,
}

impl Catalogue {
    /// Parses and checks a catalogue file's text. The error is one line.
    pub fn parse(text: &str) -> Result<Catalogue, GatewayError> {
        if text.len() > MAX_CATALOGUE_BYTES {
            return Err(GatewayError::Config(format!(
                "models file: {} bytes, more than {MAX_CATALOGUE_BYTES}",
                text.len()
            )));
        }
        let file: CatalogueFile = toml::from_str(text).map_err(|error| {
            let message = error.message().trim().to_owned();
            let at = error
                .span()
                .map(|span| {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            GatewayError::Config(format!("models file: {message}{at}"))
        })?;
        Catalogue::new(file.model)
    }

    /// Reads and parses a catalogue file (a regular file, bounded).
    pub fn read(path: &std::path::Path) -> Result<Catalogue, GatewayError> {
        let bytes = duel_files::read_regular_within(
            path,
            MAX_CATALOGUE_BYTES as u64,
            duel_files::READ_DEADLINE,
        )
        .map_err(|error| GatewayError::Config(format!("models file {error}")))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            GatewayError::Config(format!("models file {}: not UTF-8", path.display()))
        })?;
        Catalogue::parse(&text).map_err(|error| match error {
            GatewayError::Config(message) => GatewayError::Config(message.replacen(
                "models file",
                &format!("models file {}", path.display()),
                1,
            )),
            // Parsing fails with Config only; `serve` builds have other variants.
            #[allow(unreachable_patterns)]
            other => other,
        })
    }

    /// The one-model shorthand: `--model-url URL --model NAME` (NAME may be
    /// left out for [`HOUSE_URL`], which is then named `house`). The model
    /// is the default; its key, if any, comes from `DUEL_MODEL_API_KEY`.
    pub fn single(url: &str, model: Option<&str>) -> Result<Catalogue, GatewayError> {
        let name = match (model, url.trim() == HOUSE_URL) {
            (Some(name), _) => name.to_owned(),
            (None, true) => "house".to_owned(),
            (None, false) => {
                return Err(GatewayError::Config(
                    "--model must name the model to call at --model-url".to_owned(),
                ));
            }
        };
        Catalogue::new(vec![ModelEntry {
            name,
            url: url.trim().to_owned(),
            upstream_model: None,
            api_key_env: Some(MODEL_API_KEY_ENV.to_owned()),
            input_usd_per_mtok: None,
            output_usd_per_mtok: None,
            default: true,
        }])
    }

    /// Checks `entries`; the error names the entry.
    pub fn new(entries: Vec<ModelEntry>) -> Result<Catalogue, GatewayError> {
        if entries.is_empty() {
            return Err(GatewayError::Config(
                "models file: no [[model]] tables".to_owned(),
            ));
        }
        if entries.len() > MAX_CATALOGUE_MODELS {
            return Err(GatewayError::Config(format!(
                "models file: {} models, more than {MAX_CATALOGUE_MODELS}",
                entries.len()
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for entry in &entries {
            check_entry(entry)?;
            if !seen.insert(entry.name.as_str()) {
                return Err(GatewayError::Config(format!(
                    "models file: model {:?} is listed twice",
                    entry.name
                )));
            }
        }
        let defaults: Vec<&str> = entries
            .iter()
            .filter(|entry| entry.default)
            .map(|entry| entry.name.as_str())
            .collect();
        if defaults.len() > 1 {
            return Err(GatewayError::Config(format!(
                "models file: {} are all `default = true`; at most one may be",
                defaults.join(", ")
            )));
        }
        Ok(Catalogue { entries })
    }

    pub fn entries(&self) -> &[ModelEntry] {
        &self.entries
    }

    /// The model a request naming none gets: the one marked default, or the
    /// only one.
    pub fn default_name(&self) -> Option<&str> {
        match self.entries.iter().find(|entry| entry.default) {
            Some(entry) => Some(&entry.name),
            None if self.entries.len() == 1 => Some(&self.entries[0].name),
            None => None,
        }
    }
}

fn check_entry(entry: &ModelEntry) -> Result<(), GatewayError> {
    let refuse = |what: String| {
        Err(GatewayError::Config(format!(
            "models file: model {:?}: {what}",
            entry.name
        )))
    };
    if entry.name.is_empty() || entry.name.len() > MAX_MODEL_NAME_BYTES {
        return refuse(format!("a name is 1 to {MAX_MODEL_NAME_BYTES} bytes"));
    }
    if entry
        .name
        .chars()
        .any(|c| c.is_control() || c.is_whitespace())
    {
        return refuse("a name has no spaces or control characters".to_owned());
    }
    if let Some(upstream) = &entry.upstream_model
        && (upstream.trim().is_empty() || upstream.len() > MAX_MODEL_NAME_BYTES)
    {
        return refuse(format!(
            "upstream_model is 1 to {MAX_MODEL_NAME_BYTES} bytes"
        ));
    }
    if entry.url.trim() != HOUSE_URL
        && let Err(error) = chat_completions_url(&entry.url)
    {
        return refuse(error);
    }
    if let Some(name) = &entry.api_key_env
        && (name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        return refuse(format!(
            "api_key_env {name:?} is not an environment variable name"
        ));
    }
    for (field, price) in [
        ("input_usd_per_mtok", entry.input_usd_per_mtok),
        ("output_usd_per_mtok", entry.output_usd_per_mtok),
    ] {
        if let Some(price) = price
            && !(price.is_finite() && (0.0..=MAX_PRICE_USD_PER_MTOK).contains(&price))
        {
            return refuse(format!(
                "{field} must be from 0 to {MAX_PRICE_USD_PER_MTOK} dollars"
            ));
        }
    }
    Ok(())
}

/// The chat-completions URL of a base URL (`…/v1`) or of the full URL; the
/// error says what is expected.
fn chat_completions_url(url: &str) -> Result<reqwest::Url, String> {
    let trimmed = url.trim().trim_end_matches('/');
    let full = if trimmed.ends_with("/chat/completions") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/chat/completions")
    };
    let parsed = reqwest::Url::parse(&full).map_err(|error| format!("url {url:?}: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(format!(
            "url {url:?}: expected http://host:port/v1, https://host/v1 or {HOUSE_URL}"
        ));
    }
    Ok(parsed)
}

/// Where metered model calls go: every model of a catalogue, ready to call.
/// Shared by every match of a process; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct ModelGateway {
    models: Option<Arc<Models>>,
}

#[derive(Debug)]
struct Models {
    list: Vec<Arc<Model>>,
    default: Option<usize>,
}

/// One callable model.
#[derive(Debug)]
pub struct Model {
    /// The catalogue name.
    pub name: Arc<str>,
    /// As the replay header records it.
    pub price: ModelPrice,
    upstream: Upstream,
}

enum Upstream {
    Http(HttpUpstream),
    House,
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Upstream::Http(http) => f
                .debug_struct("Http")
                .field("url", &http.url.as_str())
                .field("model", &http.upstream_model)
                .finish_non_exhaustive(),
            Upstream::House => f.write_str("House"),
        }
    }
}

struct HttpUpstream {
    url: reqwest::Url,
    upstream_model: String,
    authorization: Option<http::HeaderValue>,
    http: reqwest::Client,
}

/// Sampling settings a bot may pass through to the upstream (the OpenAI
/// face forwards these; the other faces send none). Each is checked to be a
/// JSON value of the right type before it is forwarded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<i64>,
    pub stop: Vec<String>,
}

/// What an upstream answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamAnswer {
    pub text: String,
}

/// Why a name does not resolve to a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolve {
    /// No model is configured at all.
    NoModels,
    /// The catalogue has no model of this name (the name as recorded:
    /// [`recorded_name`]).
    NotFound(String),
    /// The name is longer than any catalogue name may be
    /// ([`MAX_MODEL_NAME_BYTES`]); its length in bytes.
    NameTooLong(usize),
    /// The request named no model and the catalogue has no default.
    NoDefault(Vec<String>),
}

impl ModelGateway {
    /// A gateway without a model: every call is `unavailable` and costs nothing.
    pub fn disabled() -> ModelGateway {
        ModelGateway { models: None }
    }

    /// The one-model shorthand ([`Catalogue::single`]), forwarding to an
    /// `http://` or `https://` URL trusting the system's roots, with `api_key`.
    pub fn new(config: ModelConfig) -> Result<ModelGateway, GatewayError> {
        ModelGateway::trusting(config, &Trust::system())
    }

    /// [`ModelGateway::new`], trusting `trust` for `https://` (`DUEL_EXTRA_CA`).
    pub fn trusting(config: ModelConfig, trust: &Trust) -> Result<ModelGateway, GatewayError> {
        let catalogue = Catalogue::single(&config.url, Some(&config.model))?;
        let key = config.api_key.clone();
        ModelGateway::from_catalogue(&catalogue, &move |_| key.clone(), trust)
    }

    /// Every model of `catalogue`, ready to call. `api_key` reads the
    /// environment variable an entry names (the binary reads the
    /// environment, never the library); an entry naming one that is not
    /// set is refused, except the shorthand's optional `DUEL_MODEL_API_KEY`.
    pub fn from_catalogue(
        catalogue: &Catalogue,
        api_key: &dyn Fn(&str) -> Option<String>,
        trust: &Trust,
    ) -> Result<ModelGateway, GatewayError> {
        let mut list = Vec::with_capacity(catalogue.entries().len());
        for entry in catalogue.entries() {
            let upstream = if entry.url.trim() == HOUSE_URL {
                Upstream::House
            } else {
                let key = match &entry.api_key_env {
                    Some(variable) => {
                        let key = api_key(variable);
                        if key.is_none() && variable != MODEL_API_KEY_ENV {
                            return Err(GatewayError::Config(format!(
                                "model {:?}: its api_key_env {variable} is not set",
                                entry.name
                            )));
                        }
                        key
                    }
                    None => None,
                };
                Upstream::Http(HttpUpstream::new(entry, key, trust)?)
            };
            list.push(Arc::new(Model {
                name: entry.name.as_str().into(),
                price: ModelPrice {
                    name: entry.name.clone(),
                    input_usd_per_mtok: entry
                        .input_usd_per_mtok
                        .and_then(serde_json::Number::from_f64),
                    output_usd_per_mtok: entry
                        .output_usd_per_mtok
                        .and_then(serde_json::Number::from_f64),
                },
                upstream,
            }));
        }
        let default = catalogue
            .default_name()
            .and_then(|name| list.iter().position(|model| &*model.name == name));
        Ok(ModelGateway {
            models: Some(Arc::new(Models { list, default })),
        })
    }

    pub fn is_enabled(&self) -> bool {
        self.models.is_some()
    }

    /// The catalogue's names, in its order.
    pub fn names(&self) -> Vec<Arc<str>> {
        self.models
            .as_ref()
            .map(|models| models.list.iter().map(|model| model.name.clone()).collect())
            .unwrap_or_default()
    }

    /// The model a request names (empty: the default).
    pub fn resolve(&self, requested: &str) -> Result<Arc<Model>, Resolve> {
        let Some(models) = &self.models else {
            return Err(Resolve::NoModels);
        };
        if requested.is_empty() {
            return match models.default {
                Some(index) => Ok(models.list[index].clone()),
                None => Err(Resolve::NoDefault(
                    models
                        .list
                        .iter()
                        .map(|model| model.name.to_string())
                        .collect(),
                )),
            };
        }
        if requested.len() > MAX_MODEL_NAME_BYTES {
            return Err(Resolve::NameTooLong(requested.len()));
        }
        models
            .list
            .iter()
            .find(|model| &*model.name == requested)
            .cloned()
            .ok_or_else(|| Resolve::NotFound(recorded_name(requested)))
    }
}

impl Model {
    /// Forwards one call of at most `cap_tokens` completion tokens. The error
    /// is one line saying why the model gave no answer (nothing is charged
    /// for it).
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        cap_tokens: u64,
        sampling: &Sampling,
    ) -> Result<UpstreamAnswer, String> {
        match &self.upstream {
            Upstream::House => Ok(UpstreamAnswer {
                text: house_answer(messages),
            }),
            Upstream::Http(http) => http.chat(messages, cap_tokens, sampling).await,
        }
    }

    /// Whether this is the built-in house model.
    pub fn is_house(&self) -> bool {
        matches!(self.upstream, Upstream::House)
    }
}

/// A model name a bot sent, as records keep it (the replay's
/// `calls[].model`, the transcript, logs and error bodies): at most
/// [`MAX_MODEL_NAME_BYTES`] of it, control and bidirectional-override
/// characters replaced by `?` so that no record can move a reader's cursor
/// or reorder a line, and `…[N bytes]` after a longer name. A catalogue
/// name is kept as it is (catalogue names have no control characters).
pub fn recorded_name(name: &str) -> String {
    if name.len() <= MAX_MODEL_NAME_BYTES && !name.chars().any(is_unsafe_in_records) {
        return name.to_owned();
    }
    let mut kept = String::with_capacity(MAX_MODEL_NAME_BYTES);
    for c in name.chars() {
        if kept.len() + c.len_utf8() > MAX_MODEL_NAME_BYTES {
            break;
        }
        kept.push(if is_unsafe_in_records(c) { '?' } else { c });
    }
    if name.len() > MAX_MODEL_NAME_BYTES {
        kept.push_str(&format!("…[{} bytes]", name.len()));
    }
    kept
}

/// Control characters and the Unicode bidirectional controls (U+061C,
/// U+200E-U+200F, U+202A-U+202E, U+2066-U+2069).
fn is_unsafe_in_records(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The built-in house model's answer: an action word chosen by the SHA-256
/// of the prompt (roles and texts, in order), then one sentence. The same
/// prompt always gets the same answer; no network, no key, no cost beyond
/// the tokens it is metered for like any model.
pub fn house_answer(messages: &[ChatMessage]) -> String {
    const ACTIONS: [&str; 6] = ["JAB", "HEAVY", "BLOCK", "DODGE", "FEINT", "RECOVER"];
    const REASONS: [&str; 4] = [
        "it keeps the pressure on",
        "it answers what the tape shows",
        "stamina decides the next exchanges",
        "the opponent has a habit to punish",
    ];
    let mut hasher = Sha256::new();
    for message in messages {
        hasher.update(message.role.as_bytes());
        hasher.update([0]);
        hasher.update(message.content.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let action = ACTIONS[usize::from(digest[0]) % ACTIONS.len()];
    let reason = REASONS[usize::from(digest[1]) % REASONS.len()];
    format!("{action}. The house model plays {action}: {reason}.")
}

/// The one-model shorthand's settings: `--model-url`, `--model` and
/// `DUEL_MODEL_API_KEY`.
#[derive(Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// The chat-completions URL (`…/v1/chat/completions`), a base URL
    /// (`…/v1`) to which `/chat/completions` is added, or [`HOUSE_URL`].
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelConfig")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ModelConfig {
    /// `api_key` is read by the binary (from [`MODEL_API_KEY_ENV`]).
    pub fn new(url: String, model: String, api_key: Option<String>) -> ModelConfig {
        ModelConfig {
            url,
            model,
            api_key,
        }
    }
}

impl HttpUpstream {
    fn new(
        entry: &ModelEntry,
        api_key: Option<String>,
        trust: &Trust,
    ) -> Result<HttpUpstream, GatewayError> {
        let url = chat_completions_url(&entry.url)
            .map_err(|error| GatewayError::Config(format!("model {:?}: {error}", entry.name)))?;
        let authorization = match api_key {
            Some(key) => {
                let mut value =
                    http::HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                        GatewayError::Config(format!(
                            "model {:?}: its API key holds characters not allowed in a header",
                            entry.name
                        ))
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        // No redirects: a metered call goes where it was configured to, with
        // the key, or fails.
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("duel-referee/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = trust.extra_ca_pem() {
            let certificates = reqwest::Certificate::from_pem_bundle(pem).map_err(|error| {
                GatewayError::Config(format!(
                    "{}: not PEM certificates: {error}",
                    crate::tls::EXTRA_CA_ENV
                ))
            })?;
            builder = builder.tls_certs_merge(certificates);
        }
        let http = builder.build().map_err(|error| {
            GatewayError::Config(format!("cannot set up the model client: {}", chain(&error)))
        })?;
        Ok(HttpUpstream {
            url,
            upstream_model: entry
                .upstream_model
                .clone()
                .unwrap_or_else(|| entry.name.clone()),
            authorization,
            http,
        })
    }

    async fn chat(
        &self,
        messages: &[ChatMessage],
        max_tokens: u64,
        sampling: &Sampling,
    ) -> Result<UpstreamAnswer, String> {
        let mut body = serde_json::json!({
            "model": self.upstream_model,
            "messages": messages
                .iter()
                .map(|message| serde_json::json!({"role": message.role, "content": message.content}))
                .collect::<Vec<_>>(),
            "max_tokens": max_tokens,
            "stream": false,
        });
        if let Some(object) = body.as_object_mut() {
            if let Some(temperature) = sampling.temperature {
                object.insert("temperature".to_owned(), temperature.into());
            }
            if let Some(top_p) = sampling.top_p {
                object.insert("top_p".to_owned(), top_p.into());
            }
            if let Some(seed) = sampling.seed {
                object.insert("seed".to_owned(), seed.into());
            }
            if !sampling.stop.is_empty() {
                object.insert("stop".to_owned(), sampling.stop.clone().into());
            }
        }
        let mut request = self
            .http
            .post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(authorization) = &self.authorization {
            request = request.header(http::header::AUTHORIZATION, authorization.clone());
        }
        let call = async {
            let mut response = request
                .send()
                .await
                .map_err(|error| format!("cannot reach the model: {}", chain(&error)))?;
            let status = response.status();
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| format!("cannot read the model's answer: {}", chain(&error)))?
            {
                if bytes.len() + chunk.len() > MAX_MODEL_RESPONSE_BYTES {
                    return Err(format!(
                        "the model's answer is larger than {MAX_MODEL_RESPONSE_BYTES} bytes"
                    ));
                }
                bytes.extend_from_slice(&chunk);
            }
            if !status.is_success() {
                return Err(format!("upstream {}", status.as_u16()));
            }
            parse_completion(&bytes).map(|text| UpstreamAnswer { text })
        };
        match tokio::time::timeout(MODEL_CALL_TIMEOUT, call).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "the model did not answer within {} s",
                MODEL_CALL_TIMEOUT.as_secs()
            )),
        }
    }
}

/// An error with its causes, on one line (a TLS failure's reason is a cause).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The text of `choices[0].message.content` of an OpenAI-style answer.
fn parse_completion(bytes: &[u8]) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|error| format!("the model's answer is not JSON: {error}"))?;
    value
        .pointer("/choices/0/message/content")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "the model's answer has no choices[0].message.content".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_catalogue_and_finds_its_default() {
        let catalogue = Catalogue::parse(
            r#"
            [[model]]
            name = "alpha"
            url = "http://127.0.0.1:8080/v1"
            input_usd_per_mtok = 0.15
            output_usd_per_mtok = 0.6

            [[model]]
            name = "house"
            url = "builtin:house"
            default = true
            "#,
        )
        .expect("parses");
        assert_eq!(catalogue.entries().len(), 2);
        assert_eq!(catalogue.default_name(), Some("house"));
        let gateway =
            ModelGateway::from_catalogue(&catalogue, &|_| None, &Trust::system()).expect("gateway");
        assert_eq!(&*gateway.resolve("").expect("default").name, "house");
        assert_eq!(&*gateway.resolve("alpha").expect("named").name, "alpha");
        assert_eq!(
            gateway.resolve("beta").map(|model| model.name.clone()),
            Err(Resolve::NotFound("beta".to_owned()))
        );
        let alpha = gateway.resolve("alpha").expect("alpha");
        assert_eq!(alpha.price.cost_usd(1_000_000, 0), Some(0.15));
    }

    /// Each mistake is one line naming what is wrong.
    #[test]
    fn refuses_bad_catalogues() {
        let cases = [
            ("", "no [[model]] tables"),
            ("[[model]]\nname = \"a\"\n", "missing field `url`"),
            (
                "[[model]]\nname = \"a\"\nurl = \"builtin:house\"\ncolour = 1\n",
                "unknown field `colour`",
            ),
            (
                "[[model]]\nname = \"a\"\nurl = \"ftp://x/v1\"\n",
                "expected http://host:port/v1",
            ),
            (
                "[[model]]\nname = \"a\"\nurl = \"builtin:house\"\n[[model]]\nname = \"a\"\nurl = \"builtin:house\"\n",
                "listed twice",
            ),
            (
                "[[model]]\nname = \"a\"\nurl = \"builtin:house\"\ndefault = true\n[[model]]\nname = \"b\"\nurl = \"builtin:house\"\ndefault = true\n",
                "at most one",
            ),
            (
                "[[model]]\nname = \"a\"\nurl = \"builtin:house\"\ninput_usd_per_mtok = -1.0\n",
                "input_usd_per_mtok must be",
            ),
            (
                "[[model]]\nname = \"a b\"\nurl = \"builtin:house\"\n",
                "no spaces",
            ),
            (
                "[[model]]\nname = \"a\"\nurl = \"builtin:house\"\napi_key_env = \"A-B\"\n",
                "not an environment variable name",
            ),
        ];
        for (text, expected) in cases {
            let error = Catalogue::parse(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }

    #[test]
    fn an_unset_key_variable_is_refused() {
        let catalogue = Catalogue::parse(
            "[[model]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/v1\"\napi_key_env = \"NOPE_KEY\"\n",
        )
        .expect("parses");
        let error = ModelGateway::from_catalogue(&catalogue, &|_| None, &Trust::system())
            .expect_err("unset")
            .to_string();
        assert!(error.contains("NOPE_KEY is not set"), "{error}");
    }

    /// A bot's model name is recorded within a bound whatever it sent:
    /// its prefix and length past the bound, no control or bidi character.
    #[test]
    fn recorded_names_are_bounded_and_inert() {
        let cases: [(String, &str); 5] = [
            ("gpt-4o".to_owned(), "gpt-4o"),
            ("a\u{1b}[31mb".to_owned(), "a?[31mb"),
            ("x\u{202E}y".to_owned(), "x?y"),
            ("é".repeat(100), &"é".repeat(64)),
            ("m".repeat(6 * 1024 * 1024), &"m".repeat(128)),
        ];
        for (name, prefix) in cases {
            let recorded = recorded_name(&name);
            assert!(
                recorded.len() <= crate::limits::MAX_RECORDED_MODEL_NAME_BYTES,
                "{}",
                recorded.len()
            );
            assert!(recorded.starts_with(prefix), "{recorded:.40}");
            assert!(!recorded.chars().any(is_unsafe_in_records));
            if name.len() > MAX_MODEL_NAME_BYTES {
                assert!(recorded.ends_with(&format!("…[{} bytes]", name.len())));
            }
        }
        let worst = recorded_name(&"\u{202E}".repeat(10_000));
        assert!(worst.len() <= crate::limits::MAX_RECORDED_MODEL_NAME_BYTES);
    }

    #[test]
    fn a_name_past_the_bound_is_refused_unread() {
        let catalogue = Catalogue::single(HOUSE_URL, None).expect("house");
        let gateway =
            ModelGateway::from_catalogue(&catalogue, &|_| None, &Trust::system()).expect("gateway");
        let long = "h".repeat(MAX_MODEL_NAME_BYTES + 1);
        assert_eq!(
            gateway.resolve(&long).map(|model| model.name.clone()),
            Err(Resolve::NameTooLong(MAX_MODEL_NAME_BYTES + 1))
        );
    }

    #[test]
    fn the_house_answers_the_same_prompt_the_same_way() {
        let prompt = [ChatMessage::new("user", "round 1, exchange 1")];
        let answer = house_answer(&prompt);
        assert_eq!(answer, house_answer(&prompt));
        let word = answer.split('.').next().expect("a word");
        assert!(
            ["JAB", "HEAVY", "BLOCK", "DODGE", "FEINT", "RECOVER"].contains(&word),
            "{answer}"
        );
        let answers: std::collections::HashSet<String> = (0..40)
            .map(|i| house_answer(&[ChatMessage::new("user", format!("prompt {i}"))]))
            .collect();
        assert!(answers.len() > 6, "varies with the prompt: {answers:?}");
    }

    #[test]
    fn the_shorthand_names_the_house_house_and_needs_a_name_otherwise() {
        let house = Catalogue::single(HOUSE_URL, None).expect("house");
        assert_eq!(house.default_name(), Some("house"));
        assert!(Catalogue::single("http://127.0.0.1:1/v1", None).is_err());
    }

    #[test]
    fn takes_http_and_https_only_and_keeps_the_key_out_of_debug() {
        for url in ["https://example.invalid/v1", "http://127.0.0.1:1/v1"] {
            let config = ModelConfig::new(url.into(), "m".into(), None);
            assert!(ModelGateway::new(config).is_ok(), "{url}");
        }
        let ftp = ModelGateway::new(ModelConfig::new(
            "ftp://example.invalid/v1".into(),
            "m".into(),
            None,
        ));
        assert!(ftp.expect_err("ftp").to_string().contains("expected http"));
        let config = ModelConfig::new(
            "http://127.0.0.1:1/v1".into(),
            "m".into(),
            Some("sk-secret".into()),
        );
        assert!(!format!("{config:?}").contains("sk-secret"));
        let gateway = ModelGateway::new(config).expect("gateway");
        assert!(!format!("{gateway:?}").contains("sk-secret"));
    }
}
