//! OpenAI-compatible chat: `POST /v1/chat/completions` and `GET /v1/models`, so chat front
//! ends and the OpenAI client libraries reach the router with no glue code.
//!
//! A chat's messages map onto the one request type: the last `user` message is the
//! question, the last `assistant` message before it is what the assistant said (the
//! conversation's `assistant`), and `session_id` (an extra field) names the session whose
//! turns weigh on the routing. Without `session_id`, the earlier `user` messages (the last
//! [`MAX_EARLIER_TURNS`], each with the assistant's message before it) are the
//! conversation: routed as its turns, oldest first, and never executed (only the last
//! message runs on an adapter, so a template with side effects fires once). Those turns
//! live in the request alone: nothing is kept in the session store, so two chats of one
//! caller never meet there. The answer is one `assistant` message whose content is
//! Switchyard's answer text, with the whole answer (routing metadata, data rows) in the
//! extra field `switchyard`. `stream: true` answers as server-sent events: one content
//! chunk, a finishing chunk, then `[DONE]`. `model` is echoed, not used: the server serves
//! one catalog, which `GET /v1/models` names `switchyard`. Errors use OpenAI's shape.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use switchyard_core::service::Question;
use switchyard_core::ServiceError;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::CheckedJson;
use crate::render::Render;
use crate::{Authorized, Shared};

/// The one model `GET /v1/models` lists.
pub const MODEL_ID: &str = "switchyard";

/// Earlier user messages routed as turns when no `session_id` is given; each costs one
/// more routing (never an execution).
pub const MAX_EARLIER_TURNS: usize = 4;

/// `POST /v1/chat/completions`. Other OpenAI fields (`temperature`, `max_tokens`, ...) are
/// accepted and ignored.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ChatRequest {
    /// Echoed in the answer; the server serves one catalog (`GET /v1/models`).
    #[serde(default)]
    #[schema(example = "switchyard")]
    pub model: Option<String>,
    /// The conversation so far, oldest first; the last one is the user's question (a
    /// rule JSON Schema cannot state: another role last is a 400 naming `messages`).
    #[schema(min_items = 1)]
    pub messages: Vec<ChatMessage>,
    /// Answer as server-sent events (one content chunk, then `[DONE]`).
    #[serde(default)]
    pub stream: Option<bool>,
    /// Switchyard's own: the session whose turns weigh on the routing.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    pub session_id: Option<String>,
    /// Switchyard's own: search only these of the caller's datasources.
    #[serde(default)]
    pub datasources: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: ChatContent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

/// A message's text, or its parts (the `text` ones are read).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(
    untagged,
    expecting = "content must be a string or a list of content parts"
)]
pub enum ChatContent {
    Text(String),
    Parts(Vec<ChatContentPart>),
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ChatContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

impl ChatContent {
    fn text(&self) -> String {
        match self {
            ChatContent::Text(text) => text.clone(),
            ChatContent::Parts(parts) => parts
                .iter()
                .filter(|p| p.kind == "text")
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// One server-sent event of a streamed answer, as a client parses it (before OpenAPI 3.2
/// a stream's `schema` describes each event): `data` is a `chat.completion.chunk` object as
/// JSON, or `[DONE]`. Only documented; the stream is written by hand.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServerSentEvent {
    /// The event's type when named (`message` by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    pub data: String,
}

/// The answer: OpenAI's `chat.completion`, with Switchyard's answer in `switchyard`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatCompletion {
    pub id: String,
    #[schema(example = "chat.completion")]
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChatChoice>,
    pub usage: ChatUsage,
    /// Switchyard's whole answer, as `POST /v1/query` gives it.
    #[schema(value_type = Object)]
    pub switchyard: Value,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatChoice {
    pub index: u32,
    pub message: ChatAnswerMessage,
    #[schema(example = "stop")]
    pub finish_reason: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatAnswerMessage {
    pub role: ChatRole,
    pub content: String,
}

/// No language model runs: no tokens are counted.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatUsage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
}

/// `GET /v1/models`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ModelList {
    #[schema(example = "list")]
    pub object: String,
    pub data: Vec<Model>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Model {
    #[schema(example = "switchyard")]
    pub id: String,
    #[schema(example = "model")]
    pub object: String,
    pub created: u64,
    pub owned_by: String,
}

/// OpenAI's error shape.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatErrorBody {
    pub error: ChatErrorDetail,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatErrorDetail {
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `permission_error`,
    /// `rate_limit_error` or `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The request field at fault, when there is one.
    pub param: Option<String>,
    /// Switchyard's error code (`invalid_request`, `forbidden`, ...).
    pub code: String,
}

/// An [`ApiError`] answered in OpenAI's shape.
pub struct ChatError(pub ApiError);

impl From<ApiError> for ChatError {
    fn from(e: ApiError) -> Self {
        ChatError(e)
    }
}

impl IntoResponse for ChatError {
    fn into_response(self) -> Response {
        let (status, code, param) = self.0.parts();
        let kind = match status {
            StatusCode::UNAUTHORIZED => "authentication_error",
            StatusCode::FORBIDDEN => "permission_error",
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            s if s.is_server_error() => "server_error",
            _ => "invalid_request_error",
        };
        let body = ChatErrorBody {
            error: ChatErrorDetail {
                message: self.0.to_string(),
                kind: kind.to_owned(),
                param,
                code: code.to_owned(),
            },
        };
        (status, Json(body)).into_response()
    }
}

/// The question and what the assistant said before it, from a chat's messages.
fn question(request: &ChatRequest, owner: String) -> Result<Question, ApiError> {
    let last = request
        .messages
        .last()
        .ok_or_else(|| ApiError::invalid("messages", "must hold at least one message"))?;
    if last.role != ChatRole::User {
        return Err(ApiError::invalid(
            "messages",
            "the last message must be the user's question",
        ));
    }
    let query = last.content.text();
    let assistant = request.messages[..request.messages.len() - 1]
        .iter()
        .rev()
        .take_while(|m| m.role != ChatRole::User)
        .find(|m| m.role == ChatRole::Assistant)
        .map(|m| m.content.text())
        .filter(|text| !text.trim().is_empty());
    Ok(Question {
        query,
        session_id: request.session_id.clone(),
        datasources: request.datasources.clone(),
        owner,
        assistant,
        // A chat's assistant messages are the answers we gave it.
        assistant_is_ours: true,
        ..Question::default()
    })
}

/// The earlier turns of a chat without `session_id`: each earlier user message with the
/// assistant's message before it, oldest first, at most [`MAX_EARLIER_TURNS`].
fn history(request: &ChatRequest, question: &Question) -> Vec<Question> {
    let earlier = &request.messages[..request.messages.len().saturating_sub(1)];
    let mut turns: Vec<Question> = Vec::new();
    let mut assistant: Option<String> = None;
    for message in earlier {
        match message.role {
            ChatRole::Assistant => {
                assistant = Some(message.content.text()).filter(|t| !t.trim().is_empty())
            }
            ChatRole::User => turns.push(Question {
                query: message.content.text(),
                assistant: assistant.take(),
                assistant_is_ours: true,
                datasources: question.datasources.clone(),
                owner: question.owner.clone(),
                ..Question::default()
            }),
            _ => {}
        }
    }
    let skip = turns.len().saturating_sub(MAX_EARLIER_TURNS);
    turns.split_off(skip)
}

/// The question and the assistant's turn come from `messages`: an error about either
/// names that field, the one the caller sent.
fn in_messages(error: ServiceError) -> ApiError {
    match error.invalid_field() {
        Some((field, message)) if field == "query" || field == "assistant" => {
            let which = if field == "query" {
                "the last user message"
            } else {
                "the last assistant message"
            };
            ApiError::invalid("messages", format!("{which}: {message}"))
        }
        _ => ApiError::from(error),
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Answer a chat's last user message: routed and executed like `POST /v1/query`.
///
/// The earlier user messages are routed as the conversation's turns, never executed.
#[utoipa::path(post, path = "/v1/chat/completions", request_body = ChatRequest, responses(
    (status = 200, description = "One assistant message; with `stream: true`, server-sent events of `chat.completion.chunk` objects ending in `[DONE]`",
        content(
            (ChatCompletion = "application/json"),
            (ServerSentEvent = "text/event-stream"),
        )),
    (status = 400, body = ChatErrorBody),
    (status = 401, body = ChatErrorBody),
    (status = 403, body = ChatErrorBody),
    (status = 409, body = ChatErrorBody),
    (status = 413, body = ChatErrorBody),
    (status = 503, body = ChatErrorBody, description = "overloaded or a store failed"),
))]
pub(crate) async fn completions(
    State(service): State<Shared>,
    authorized: Result<Authorized, ApiError>,
    body: Result<CheckedJson<ChatRequest>, ApiError>,
) -> Result<Response, ChatError> {
    let Authorized { access, owner } = authorized?;
    let CheckedJson(request) = body?;
    let question = question(&request, owner)?;
    // Without a session, the chat's earlier user messages are its turns: built in this
    // request, routed only (re-running them would repeat their side effects).
    let earlier = match question.session_id {
        Some(_) => Vec::new(),
        None => history(&request, &question),
    };
    for turn in &earlier {
        turn.validate().map_err(|e| match e.invalid_field() {
            Some((field, message)) => ApiError::invalid(
                "messages",
                format!("an earlier user message: {field}: {message}"),
            ),
            None => ApiError::from(e),
        })?;
    }
    let answer = service
        .query_after(&earlier, &question, &access)
        .await
        .map_err(in_messages)?;
    let (_, answer) = Render(service.router()).answer(question.session_id.clone(), answer);
    let content = answer.content().to_owned();
    let id = format!("chatcmpl-{}", answer.request_id());
    let answer = serde_json::to_value(&answer).map_err(|e| ApiError::Internal(e.to_string()))?;
    let model = request.model.clone().unwrap_or_else(|| MODEL_ID.to_owned());
    let created = unix_now();
    if request.stream == Some(true) {
        let chunk = |delta: Value, finish: Value, switchyard: Option<&Value>| {
            let mut chunk = json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            });
            if let Some(answer) = switchyard {
                chunk["switchyard"] = answer.clone();
            }
            format!("data: {chunk}\n\n")
        };
        let events = chunk(
            json!({"role": "assistant", "content": content}),
            Value::Null,
            Some(&answer),
        ) + &chunk(json!({}), json!("stop"), None)
            + "data: [DONE]\n\n";
        return Ok((
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            events,
        )
            .into_response());
    }
    let completion = ChatCompletion {
        id,
        object: "chat.completion".into(),
        created,
        model,
        choices: vec![ChatChoice {
            index: 0,
            message: ChatAnswerMessage {
                role: ChatRole::Assistant,
                content,
            },
            finish_reason: "stop".into(),
        }],
        usage: ChatUsage {
            prompt_tokens: 0,
            completion_tokens: 0,
            total_tokens: 0,
        },
        switchyard: answer,
    };
    Ok(Json(completion).into_response())
}

/// The models `model` may name: the one catalog this server serves.
#[utoipa::path(get, path = "/v1/models", responses(
    (status = 200, body = ModelList),
    (status = 401, body = ChatErrorBody),
    (status = 403, body = ChatErrorBody),
))]
pub(crate) async fn models(
    State(_): State<Shared>,
    authorized: Result<Authorized, ApiError>,
) -> Result<Json<ModelList>, ChatError> {
    authorized?;
    Ok(Json(ModelList {
        object: "list".into(),
        data: vec![Model {
            id: MODEL_ID.into(),
            object: "model".into(),
            created: 0,
            owned_by: "switchyard".into(),
        }],
    }))
}
