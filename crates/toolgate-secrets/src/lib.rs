//! Finds secrets and personal data in text and JSON, and replaces each with
//! `[REDACTED:<kind>]`, counting them by kind. Used by the `redact` interceptor (results and
//! arguments) and by the audit log (the recorded copy of arguments).
//!
//! ```
//! use toolgate_secrets::{Detector, Selection};
//!
//! let detector = Detector::new(&Selection::all());
//! let redacted = detector.redact("key AKIAIOSFODNN7EXAMPLE, mail ops@example.com");
//! assert_eq!(redacted.text, "key [REDACTED:aws_access_key], mail [REDACTED:email]");
//! assert_eq!(redacted.counts.get("email"), 1);
//! ```
//!
//! # Kinds
//!
//! | kind | what |
//! |---|---|
//! | `private_key` | `-----BEGIN ... PRIVATE KEY-----` through its `END` line (PEM, OpenSSH, PGP `... PRIVATE KEY BLOCK`); a block cut off before `END`: the header and its base64 body |
//! | `jwt` | `eyJ...`: three base64url parts whose header decodes to a JSON object with a string `alg` |
//! | `anthropic_key` | `sk-ant-` and 20 or more of `A-Z a-z 0-9 _ -` |
//! | `openai_key` | `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` and 20 or more of `A-Z a-z 0-9 _ -`, with digits and both cases in it (`sk-learn-classifier-pipeline` is not a key) |
//! | `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36 or more letters and digits; `github_pat_` and 22 or more |
//! | `slack_webhook` | `https://hooks.slack.com/services/...` (`workflows/`, `triggers/`): the whole URL |
//! | `slack_token` | `xoxb-`, `xoxa-`, `xoxp-`, `xoxr-`, `xoxs-` and 10 or more |
//! | `stripe_key` | `sk_live_`, `rk_live_`, `pk_live_`, `sk_test_`, `rk_test_`, `pk_test_` and 10 or more letters and digits |
//! | `google_api_key` | `AIza` and exactly 35 of `A-Z a-z 0-9 _ -` |
//! | `aws_access_key` | `AKIA`, `ASIA`, `ABIA`, `ACCA` and 16 of `A-Z 0-9`, as a word |
//! | `aws_secret_key` | exactly 40 of `A-Z a-z 0-9 / +` after a key name (`aws_secret_access_key`, `AWS_SECRET_KEY`, `SecretAccessKey`, any case) and `=` or `:`: the 40 characters |
//! | `url_credentials` | the `user:password` of `scheme://user:password@host`; the value (8 or more characters) of `access_token`, `refresh_token`, `id_token`, `auth_token`, `token`, `api_key`, `apikey`, `api-key`, `key`, `client_secret`, `secret`, `password`, `passwd`, `sig`, `signature` after `?`, `&` or `;`; of `api_key=`, `apikey=`, `access_token=` anywhere |
//! | `bearer_token` | the token after `Bearer ` (16 or more token characters, with digits and letters) |
//! | `iban` | two capital letters, two digits, then as many letters and digits as that country's IBANs have (single spaces allowed), mod-97 checked |
//! | `card_number` | 13 to 19 digits (single spaces or dashes between them, all the same) in a run no longer than that, Luhn-checked, not one digit repeated, starting like a card of that length (Visa, Mastercard, American Express, Discover, JCB, Diners, UnionPay, Maestro, Mir) |
//! | `email` | `local@domain.tld`, except asset names (`icon@2x.png`) and the user of a URL (`ssh://git@host`) |
//!
//! plus [`Custom`] detectors: a name and a regex (a group named `secret` narrows what is
//! replaced).
//!
//! # Overlaps
//!
//! Findings that overlap become one: its span covers all of them (no part of any is left),
//! its kind is that of the longest, and between equally long ones, the first in this order:
//! custom detectors (in the order given), then the table above, top to bottom (most
//! specific first). So `sk-ant-...` is `anthropic_key`, not `openai_key`, and a JWT passed
//! as `?token=` or after `Bearer ` is a `jwt`.
//!
//! # Speed
//!
//! One [`regex::RegexSet`] pass over the text says which patterns occur at all; only those
//! are searched for their matches (and checked: Luhn, mod-97, the JWT header). Text with no
//! candidates costs one pass. Every pattern runs on the regex crate's DFAs (ASCII word
//! boundaries only). `benches/detect.rs` measures 1 MiB of mixed text.
//!
//! # JSON
//!
//! [`Detector::redact_json`] redacts every string of a value, object keys included (see
//! `json.rs`: keys are data often enough; two keys that become the same get `#2`, `#3`, ...
//! so no entry is lost). A number with 13 or more digits that is a card number (written as a
//! JSON number) becomes the marker string; other numbers are left alone.

mod checks;
mod detector;
mod json;
mod kind;
mod rules;

pub use detector::{
    Counts, Custom, Detector, DetectorError, Finding, MOST_PASSES, Redacted, Selection, marker,
};
pub use kind::Builtin;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
