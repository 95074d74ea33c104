//! Which URLs a key may go to.

use super::plain_http_host;

#[test]
fn https_and_this_machine_are_fine() {
    for url in [
        "https://api.openai.com/v1",
        "https://10.0.0.5:8443/v1",
        "http://localhost:11434/v1",
        "http://LOCALHOST/v1",
        "http://127.0.0.1:8080/v1",
        "http://127.1.2.3/v1",
        "http://[::1]:8000/v1",
        "http://[::ffff:127.0.0.1]/v1",
    ] {
        assert_eq!(plain_http_host(url), None, "{url}");
    }
}

#[test]
fn plain_http_to_another_host_is_named() {
    for (url, host) in [
        ("http://api.openai.com/v1", "api.openai.com"),
        ("http://10.0.0.5:8080/v1", "10.0.0.5:8080"),
        ("http://192.168.1.20/v1", "192.168.1.20"),
        ("http://[2001:db8::1]/v1", "[2001:db8::1]"),
        ("http://localhost.example.com/v1", "localhost.example.com"),
        ("http://127.0.0.1.nip.io/v1", "127.0.0.1.nip.io"),
        ("http://0.0.0.0/v1", "0.0.0.0"),
    ] {
        assert_eq!(plain_http_host(url).as_deref(), Some(host), "{url}");
    }
}

#[test]
fn what_is_not_a_url_is_left_to_other_checks() {
    assert_eq!(plain_http_host("not a url"), None);
}
