//! Tests of the webhook sink's retry timing, `Retry-After` reading and URL redaction.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

use super::{WebhookOptions, backoff_delay, endpoint, retry_after};

const BASE: Duration = Duration::from_millis(100);
const MAX: Duration = Duration::from_secs(5);

#[test]
fn backoff_doubles_from_the_base_up_to_the_cap() {
    // The largest jitter factor is 1: the delay itself.
    let top = |retried| backoff_delay(retried, BASE, MAX, 1000);
    assert_eq!(top(0), BASE);
    assert_eq!(top(1), BASE * 2);
    assert_eq!(top(4), BASE * 16);
    assert_eq!(top(6), MAX);
    assert_eq!(top(u32::MAX), MAX, "no overflow however many retries");
}

#[test]
fn backoff_jitter_stays_between_half_and_all_of_the_delay() {
    let mut seen = std::collections::BTreeSet::new();
    for random in [0, 1, 499, 500, 1000, 1001, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
        let delay = backoff_delay(3, BASE, MAX, random);
        assert!(delay >= BASE * 4 && delay <= BASE * 8, "{delay:?} for {random}");
        seen.insert(delay);
    }
    assert!(seen.len() > 3, "jitter must spread the delays: {seen:?}");
    assert_eq!(backoff_delay(3, BASE, MAX, 0), BASE * 4);
}

#[test]
fn retry_after_is_read_as_seconds() {
    let mut headers = HeaderMap::new();
    assert_eq!(retry_after(&headers), None);
    headers.insert(RETRY_AFTER, HeaderValue::from_static(" 7 "));
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
    headers.insert(RETRY_AFTER, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
    assert_eq!(retry_after(&headers), None);
}

#[test]
fn only_the_host_of_a_url_is_ever_shown() {
    let url = "https://user:pw@hooks.example.com:8443/T000/B000/s3cret?token=abc".parse().unwrap();
    assert_eq!(endpoint(&url), "hooks.example.com:8443");
    assert_eq!(endpoint(&"http://[::1]/x".parse().unwrap()), "[::1]");

    let options = WebhookOptions::new(url).header("Authorization", "Bearer hunter2");
    let debug = format!("{options:?}");
    assert!(debug.contains("hooks.example.com:8443"), "{debug}");
    assert!(debug.contains("Authorization"), "{debug}");
    for secret in ["s3cret", "token", "abc", "pw", "hunter2"] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
}

#[test]
fn check_refuses_what_the_sink_would_refuse() {
    let url = |text: &str| text.parse().expect("a URL");
    assert!(WebhookOptions::new(url("https://hooks.example.com/x")).check().is_ok());
    let ftp = WebhookOptions::new(url("ftp://hooks.example.com/x")).check();
    assert!(matches!(ftp, Err(super::WebhookError::Scheme { .. })), "{ftp:?}");
    let name = WebhookOptions::new(url("https://h.example/x")).header("bad name", "v").check();
    assert!(matches!(name, Err(super::WebhookError::HeaderName { .. })), "{name:?}");
    let value = WebhookOptions::new(url("https://h.example/x")).header("X-A", "a\nb").check();
    assert!(matches!(value, Err(super::WebhookError::HeaderValue { .. })), "{value:?}");
}
