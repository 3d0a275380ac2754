//! hindsight errors -> MCP (JSON-RPC) errors.
//!
//! | `ErrorKind` | code | |
//! |---|---|---|
//! | `InvalidInput`, `Conflict`, `EmbeddingMismatch` | -32602 | invalid params |
//! | `NotFound` | -32002 | resource not found |
//! | `Unauthorized` | -32001 | |
//! | `Rejected` | -32003 | refused by the write guard |
//! | `Backend`, `Embedding` | -32603 | internal |

use hindsight_core::{Error, ErrorKind};
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::json;

/// JSON-RPC code for a namespace the caller may not access.
pub const UNAUTHORIZED: ErrorCode = ErrorCode(-32001);
/// JSON-RPC code for a write the guard refused.
pub const REJECTED: ErrorCode = ErrorCode(-32003);

pub(crate) fn invalid(field: &str, what: impl std::fmt::Display) -> Error {
    Error::invalid(field, what)
}

fn kind_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidInput => "invalid_input",
        ErrorKind::NotFound => "not_found",
        ErrorKind::EmbeddingMismatch => "embedding_mismatch",
        ErrorKind::Conflict => "conflict",
        ErrorKind::Backend => "backend",
        ErrorKind::Unauthorized => "unauthorized",
        ErrorKind::Rejected => "rejected",
        ErrorKind::Embedding => "embedding",
    }
}

/// The MCP error for a hindsight error; `data.kind` names the [`ErrorKind`].
pub fn to_mcp(e: &Error) -> ErrorData {
    let code = match e.kind {
        ErrorKind::InvalidInput | ErrorKind::Conflict | ErrorKind::EmbeddingMismatch => {
            ErrorCode::INVALID_PARAMS
        }
        ErrorKind::NotFound => ErrorCode::RESOURCE_NOT_FOUND,
        ErrorKind::Unauthorized => UNAUTHORIZED,
        ErrorKind::Rejected => REJECTED,
        ErrorKind::Backend | ErrorKind::Embedding => ErrorCode::INTERNAL_ERROR,
    };
    ErrorData::new(
        code,
        e.message.clone(),
        Some(json!({ "kind": kind_name(e.kind) })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_kinds_to_codes() {
        let check = |e: Error, code: i32| assert_eq!(to_mcp(&e).code.0, code, "{e}");
        check(Error::invalid("content", "empty"), -32602);
        check(Error::not_found("memory x"), -32002);
        check(Error::new(ErrorKind::Unauthorized, "no"), -32001);
        check(Error::new(ErrorKind::Rejected, "no"), -32003);
        check(Error::backend("disk"), -32603);
        assert_eq!(
            to_mcp(&Error::invalid("content", "empty")).message,
            "invalid `content`: empty"
        );
    }
}
