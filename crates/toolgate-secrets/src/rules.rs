//! The patterns of the built-in kinds, and the check each candidate must pass.
//!
//! Patterns use ASCII word boundaries (`(?-u:\b)`) and ASCII classes only, so that the
//! regex crate's DFAs run them on any text (a Unicode `\b` makes them give up on non-ASCII
//! input and fall back to a much slower engine).

use crate::checks::{self, Check};
use crate::kind::Builtin;

/// One pattern of a built-in kind.
pub(crate) struct BuiltinRule {
    pub(crate) kind: Builtin,
    pub(crate) pattern: &'static str,
    /// The capture group that is the secret (the rest is context, such as a key name).
    pub(crate) group: Option<usize>,
    pub(crate) check: Check,
    /// After a candidate fails its check, look for another one starting inside it (a longer
    /// match may hide a valid shorter one); otherwise go on after it.
    pub(crate) retry: bool,
}

const fn rule(kind: Builtin, pattern: &'static str) -> BuiltinRule {
    BuiltinRule { kind, pattern, group: None, check: checks::any, retry: false }
}

const fn checked(kind: Builtin, pattern: &'static str, check: Check) -> BuiltinRule {
    BuiltinRule { kind, pattern, group: None, check, retry: false }
}

const fn grouped(kind: Builtin, pattern: &'static str, check: Check) -> BuiltinRule {
    BuiltinRule { kind, pattern, group: Some(1), check, retry: false }
}

const fn retried(kind: Builtin, pattern: &'static str, check: Check) -> BuiltinRule {
    BuiltinRule { kind, pattern, group: None, check, retry: true }
}

/// Every built-in pattern. A kind may have several; all of a kind's patterns are on or off
/// together.
pub(crate) const RULES: &[BuiltinRule] = &[
    // A whole block, its body on any number of lines (or `\n` escapes inside JSON text).
    rule(
        Builtin::PrivateKey,
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----",
    ),
    // A block cut off before its END line: the BEGIN line, header lines such as
    // `Proc-Type: 4,ENCRYPTED` and the blank line after them, and the base64 lines that
    // follow (line breaks real or `\n` escapes), up to the first line that is not base64. A
    // whole block contains this match and wins.
    rule(
        Builtin::PrivateKey,
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:(?:(?:\r?\n|\\r\\n|\\n)[A-Za-z][A-Za-z-]*: [^\r\n\\]*)+(?:\r?\n|\\r\\n|\\n))?(?:(?:\r?\n|\\r\\n|\\n)[A-Za-z0-9+/=]+)*",
    ),
    checked(
        Builtin::Jwt,
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*",
        checks::jwt,
    ),
    rule(Builtin::AnthropicKey, r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}"),
    checked(
        Builtin::OpenaiKey,
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        checks::openai,
    ),
    rule(
        Builtin::GithubToken,
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})(?-u:\b)",
    ),
    rule(
        Builtin::SlackWebhook,
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{8,}",
    ),
    rule(Builtin::SlackToken, r"(?-u:\b)xox[baprs]-[A-Za-z0-9-]{10,}"),
    rule(Builtin::StripeKey, r"(?-u:\b)[spr]k_(?:live|test)_[A-Za-z0-9]{10,}(?-u:\b)"),
    checked(Builtin::GoogleApiKey, r"(?-u:\b)AIza[A-Za-z0-9_-]{35}", checks::google),
    rule(Builtin::AwsAccessKey, r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)"),
    // `aws_secret_access_key = ...`, `AWS_SECRET_ACCESS_KEY=...`, `"SecretAccessKey": "..."`.
    grouped(
        Builtin::AwsSecretKey,
        r#"(?i-u:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})"#,
        checks::aws_secret,
    ),
    // `scheme://user:password@host`: the `user:password`.
    grouped(
        Builtin::UrlCredentials,
        r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,20}://([^\s/?#@:"'<>\[\]]+:[^\s/?#@"'<>\[\]]+)@"#,
        checks::any,
    ),
    // A credential in a query string (`?access_token=`, `&token=`, `&sig=`): the value.
    grouped(
        Builtin::UrlCredentials,
        r#"[?&;](?i-u:access_token|refresh_token|id_token|auth_token|token|api_key|apikey|api-key|key|client_secret|secret|password|passwd|sig|signature)=([^\s&#"'<>${}\[\]]{8,})"#,
        checks::any,
    ),
    // `api_key=...` and `access_token=...` anywhere (query strings written out, env dumps).
    grouped(
        Builtin::UrlCredentials,
        r#"(?-u:\b)(?i-u:api_key|apikey|access_token)=([^\s&#"'<>${}\[\]]{8,})"#,
        checks::any,
    ),
    grouped(
        Builtin::BearerToken,
        r"(?-u:\b)(?i-u:bearer)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)",
        checks::bearer,
    ),
    retried(Builtin::Iban, r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){10,30}", checks::iban),
    retried(Builtin::CardNumber, r"(?-u:\b)[0-9](?:[ -]?[0-9]){12,18}(?-u:\b)", checks::card),
    checked(
        Builtin::Email,
        r"(?-u:\b)[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?-u:\b)",
        checks::email,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_pattern_and_every_pattern_compiles() {
        for kind in Builtin::ALL {
            assert!(RULES.iter().any(|rule| rule.kind == kind), "{kind} has no pattern");
        }
        for rule in RULES {
            let regex = regex::Regex::new(rule.pattern).expect("compiles");
            if let Some(group) = rule.group {
                assert!(group < regex.captures_len(), "{}: no group {group}", rule.kind);
            }
        }
    }
}
