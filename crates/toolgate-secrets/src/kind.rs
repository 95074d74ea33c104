//! The built-in kinds of secret and personal data, their names, and their precedence.

use std::fmt;

/// A kind the detectors know without configuration.
///
/// The order of the variants is the precedence between two findings of the same length over
/// the same text (the first wins): the more specific kind before the more general one, so
/// that `sk-ant-...` is an Anthropic key and not an OpenAI key, and a JWT given as
/// `?token=` is a JWT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Builtin {
    /// `-----BEGIN ... PRIVATE KEY-----` through its `END` line (or, with no `END`, through
    /// the end of its base64 body).
    PrivateKey,
    /// A JSON Web Token: three base64url parts whose header is JSON with `alg`.
    Jwt,
    /// `sk-ant-...`.
    AnthropicKey,
    /// `sk-...`, `sk-proj-...`, `sk-svcacct-...`, `sk-admin-...`.
    OpenaiKey,
    /// `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and `github_pat_` tokens.
    GithubToken,
    /// `https://hooks.slack.com/services/...` (and `workflows/`, `triggers/`).
    SlackWebhook,
    /// `xoxb-`, `xoxa-`, `xoxp-`, `xoxr-`, `xoxs-` tokens.
    SlackToken,
    /// `sk_live_`, `rk_live_`, `pk_live_` and their `_test_` variants.
    StripeKey,
    /// `AIza` and 35 more characters.
    GoogleApiKey,
    /// `AKIA`, `ASIA`, `ABIA`, `ACCA` and 16 more characters.
    AwsAccessKey,
    /// 40 characters after a recognisable key name (`aws_secret_access_key = ...`,
    /// `"SecretAccessKey": "..."`).
    AwsSecretKey,
    /// The `user:password` of a URL, or the value of `access_token=`, `token=`, `api_key=`
    /// and similar parameters.
    UrlCredentials,
    /// The token after `Bearer ` (an `Authorization` header written out).
    BearerToken,
    /// An IBAN: a country code, check digits that pass mod-97, the country's length.
    Iban,
    /// 13 to 19 digits (spaces or dashes allowed) that pass Luhn and start like a card.
    CardNumber,
    /// An e-mail address.
    Email,
}

impl Builtin {
    /// Every built-in kind, in precedence order.
    pub const ALL: [Builtin; 16] = [
        Builtin::PrivateKey,
        Builtin::Jwt,
        Builtin::AnthropicKey,
        Builtin::OpenaiKey,
        Builtin::GithubToken,
        Builtin::SlackWebhook,
        Builtin::SlackToken,
        Builtin::StripeKey,
        Builtin::GoogleApiKey,
        Builtin::AwsAccessKey,
        Builtin::AwsSecretKey,
        Builtin::UrlCredentials,
        Builtin::BearerToken,
        Builtin::Iban,
        Builtin::CardNumber,
        Builtin::Email,
    ];

    /// The name in configs, in `[REDACTED:<name>]` and in counts.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::PrivateKey => "private_key",
            Builtin::Jwt => "jwt",
            Builtin::AnthropicKey => "anthropic_key",
            Builtin::OpenaiKey => "openai_key",
            Builtin::GithubToken => "github_token",
            Builtin::SlackWebhook => "slack_webhook",
            Builtin::SlackToken => "slack_token",
            Builtin::StripeKey => "stripe_key",
            Builtin::GoogleApiKey => "google_api_key",
            Builtin::AwsAccessKey => "aws_access_key",
            Builtin::AwsSecretKey => "aws_secret_key",
            Builtin::UrlCredentials => "url_credentials",
            Builtin::BearerToken => "bearer_token",
            Builtin::Iban => "iban",
            Builtin::CardNumber => "card_number",
            Builtin::Email => "email",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Its place in [`Builtin::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every built-in name, comma-separated, for messages.
pub(crate) fn known_names() -> String {
    let mut names = vec!["all"];
    names.extend(Builtin::ALL.iter().map(|kind| kind.name()));
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_follow_the_precedence_order() {
        for (i, kind) in Builtin::ALL.into_iter().enumerate() {
            assert_eq!(Builtin::from_name(kind.name()), Some(kind));
            assert_eq!(kind.index(), i);
            assert_eq!(kind.to_string(), kind.name());
        }
        assert_eq!(Builtin::from_name("all"), None);
        assert!(Builtin::AnthropicKey < Builtin::OpenaiKey);
        assert!(Builtin::Jwt < Builtin::UrlCredentials);
    }
}
