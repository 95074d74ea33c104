//! Property tests of the legacy SSE transport's `endpoint` event: whatever URL or path a server
//! names there (relative, absolute, with another scheme, host, port or user, with dots,
//! backslashes, percent signs or Unicode), toolgate posts only to the stream's own origin, or
//! refuses with an error that quotes what was named.

use proptest::prelude::*;
use url::Url;

use super::{SseError, resolve_endpoint};

fn base() -> impl Strategy<Value = Url> {
    (
        prop::sample::select(&["http", "https"][..]),
        prop::sample::select(&["127.0.0.1", "localhost", "[::1]", "example.com"][..]),
        prop::option::of(1u16..),
        "(/[a-z]{0,6}){0,3}",
    )
        .prop_map(|(scheme, host, port, path)| {
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            Url::parse(&format!("{scheme}://{host}{port}{path}")).expect("a valid base")
        })
}

fn endpoint() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z0-9]{1,6}",
        prop::sample::select(
            &[
                "/",
                "//",
                "\\",
                "..",
                ".",
                ":",
                "@",
                "?",
                "#",
                "%2e",
                "%2F",
                "http:",
                "https://",
                "evil.example",
                "127.0.0.1",
                ":1",
                "user:pw@",
                " ",
                "\t",
                "é"
            ][..]
        )
        .prop_map(str::to_owned),
        "\\PC{1,3}",
    ];
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn an_endpoint_is_on_the_streams_origin_or_refused(base in base(), data in endpoint()) {
        match resolve_endpoint(&base, &data) {
            Ok(url) => prop_assert_eq!(url.origin(), base.origin(), "{:?} from {}", data, base),
            Err(SseError::BadEndpoint(named)) => prop_assert_eq!(named, data),
            Err(other) => prop_assert!(false, "{:?}", other),
        }
    }
}
