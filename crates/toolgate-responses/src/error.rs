//! What the endpoint answers when it cannot serve a request: OpenAI's error shape
//! (`{"error": {"message", "type", "param", "code"}}`) with the status OpenAI would send, so
//! that the SDKs raise their usual exceptions (`BadRequestError`, `NotFoundError`, ...).
//! Everything that fails becomes one of these here, and nowhere else.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refusal of the whole request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// OpenAI's error type (`invalid_request_error`, `not_found_error`, `server_error`).
    pub kind: &'static str,
    /// What is wrong, in words.
    pub message: String,
    /// The request field at fault (`tools[0].server_label`).
    pub param: Option<String>,
    /// A machine-readable code, where there is one.
    pub code: Option<&'static str>,
}

impl ApiError {
    /// A malformed or unservable request; `param` names the field.
    pub fn invalid(param: Option<&str>, message: impl Into<String>) -> ApiError {
        let message = message.into();
        let message = match param {
            Some(param) => format!("{param}: {message}"),
            None => message,
        };
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message,
            param: param.map(str::to_owned),
            code: None,
        }
    }

    /// No such response (or not this caller's).
    pub fn not_found(id: &str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!("no response with id {id:?}"),
            param: None,
            code: Some("not_found"),
        }
    }

    /// Something on this side failed (the store, the model).
    pub fn server(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// The model behind the endpoint failed.
    pub fn upstream_model(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_GATEWAY,
            kind: "server_error",
            message: message.into(),
            param: None,
            code: Some("model_error"),
        }
    }

    /// The body of the answer.
    pub fn body(&self) -> serde_json::Value {
        json!({ "error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            // The SDKs wait this long before they try again.
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("1"));
        }
        response
    }
}
