//! What the server answers about authorization, as pure functions: the protected resource
//! metadata (RFC 9728) and the `WWW-Authenticate` values of a 401 and a 403 (RFC 6750, as
//! the MCP authorization specification uses them).

use serde_json::{Value, json};

/// The well-known path of protected resource metadata (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Where the metadata of `resource` is: the well-known path inserted between the host and
/// the resource's path (RFC 9728 §3.1), so `https://gw.example.com/mcp` has it at
/// `https://gw.example.com/.well-known/oauth-protected-resource/mcp`.
pub fn metadata_url(resource: &url::Url) -> String {
    let mut url = resource.clone();
    url.set_query(None);
    url.set_fragment(None);
    let path = resource.path().trim_end_matches('/');
    url.set_path(&format!("{METADATA_PATH}{path}"));
    url.to_string()
}

/// The protected resource metadata document (RFC 9728 §2) of `resource` (the canonical URL
/// of `/mcp`), naming the authorization server and the scopes it takes.
pub fn protected_resource_metadata(
    resource: &str,
    authorization_servers: &[String],
    scopes_supported: &[String],
) -> Value {
    let mut document = json!({
        "resource": resource,
        "authorization_servers": authorization_servers,
        "bearer_methods_supported": ["header"],
    });
    if !scopes_supported.is_empty() {
        document["scopes_supported"] = json!(scopes_supported);
    }
    document
}

/// The 401 answer to a request without a usable token: `Bearer resource_metadata="..."`, and
/// the scopes to ask for when there are any. `invalid_token` adds RFC 6750's
/// `error="invalid_token"` (a token was presented but refused).
pub fn unauthorized(metadata_url: &str, scopes: &[String], invalid_token: bool) -> String {
    let mut value = format!("Bearer resource_metadata={}", quoted(metadata_url));
    if !scopes.is_empty() {
        value.push_str(&format!(", scope={}", quoted(&scopes.join(" "))));
    }
    if invalid_token {
        value.push_str(", error=\"invalid_token\"");
    }
    value
}

/// The 403 answer to a token without the scopes the request needs: `error="insufficient_scope"`
/// and every scope needed (the client steps up with them).
pub fn insufficient_scope(metadata_url: &str, scopes: &[String]) -> String {
    format!(
        "Bearer error=\"insufficient_scope\", scope={}, resource_metadata={}",
        quoted(&scopes.join(" ")),
        quoted(metadata_url)
    )
}

/// An RFC 7230 quoted-string; characters that cannot be in one (controls) are left out.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars().filter(|c| !c.is_control()) {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_path() {
        let at = |s: &str| metadata_url(&url::Url::parse(s).unwrap());
        assert_eq!(
            at("https://gw.example.com/mcp"),
            "https://gw.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            at("http://127.0.0.1:8931/team/mcp/?x=1"),
            "http://127.0.0.1:8931/.well-known/oauth-protected-resource/team/mcp"
        );
        assert_eq!(
            at("https://gw.example.com/"),
            "https://gw.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn metadata_document() {
        let servers = vec!["https://id.example.com".to_owned()];
        let document =
            protected_resource_metadata("https://gw.example.com/mcp", &servers, &["mcp".into()]);
        assert_eq!(
            document,
            json!({
                "resource": "https://gw.example.com/mcp",
                "authorization_servers": ["https://id.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp"],
            })
        );
        let bare = protected_resource_metadata("https://gw.example.com/mcp", &servers, &[]);
        assert!(bare.get("scopes_supported").is_none());
    }

    #[test]
    fn unauthorized_challenges() {
        let url = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";
        assert_eq!(unauthorized(url, &[], false), format!("Bearer resource_metadata=\"{url}\""));
        assert_eq!(
            unauthorized(url, &["a".into(), "b:c".into()], true),
            format!("Bearer resource_metadata=\"{url}\", scope=\"a b:c\", error=\"invalid_token\"")
        );
    }

    #[test]
    fn insufficient_scope_names_the_scopes() {
        assert_eq!(
            insufficient_scope("https://gw/m", &["mcp:tools".into(), "admin".into()]),
            "Bearer error=\"insufficient_scope\", scope=\"mcp:tools admin\", \
             resource_metadata=\"https://gw/m\""
        );
    }

    #[test]
    fn quoted_strings_escape_and_drop_controls() {
        assert_eq!(quoted("a\"b\\c\r\nd"), "\"a\\\"b\\\\cd\"");
    }
}
