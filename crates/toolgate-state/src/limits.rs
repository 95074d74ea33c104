//! The bounds every backend applies alike, checked before a request reaches one, so that what
//! is refused does not depend on where the state lives.

use std::time::Duration;

use crate::StateError;
use crate::error::shown;

/// What every key is stored under, on every backend (`toolgate:<key>`).
pub const KEY_PREFIX: &str = "toolgate:";

/// The longest key, in bytes (without [`KEY_PREFIX`]).
pub const MAX_KEY_BYTES: usize = 512;

/// The longest channel name, in bytes.
pub const MAX_CHANNEL_BYTES: usize = 128;

/// The largest value: 1 MiB.
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// The largest message: 4 KiB. PostgreSQL's `NOTIFY` carries at most 7999 bytes of text, and
/// a message travels there as `<channel>\n<base64 of the payload>`: 4 KiB is 5464 characters of
/// base64, plus a channel of at most [`MAX_CHANNEL_BYTES`], with room to spare. The same bound
/// holds on every backend; a larger message belongs in a key, and the message names it.
pub const MAX_PAYLOAD_BYTES: usize = 4096;

/// The most entries one [`scan`](crate::SharedState::scan) returns, whatever its `limit`: a
/// listing is for showing (the calls held on every replica), not for copying the state. Its
/// values are held at once, so a caller whose values are large asks for fewer.
pub const MAX_SCAN: usize = 10_000;

/// The longest TTL: 30 days. Every key expires; nothing a replica writes lives forever.
pub const MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A key: not empty, at most [`MAX_KEY_BYTES`], no control characters.
pub(crate) fn check_key(key: &str) -> Result<(), StateError> {
    let reason = if key.is_empty() {
        "is empty"
    } else if key.len() > MAX_KEY_BYTES {
        "is longer than 512 bytes"
    } else if key.chars().any(char::is_control) {
        "holds a control character"
    } else {
        return Ok(());
    };
    Err(StateError::InvalidKey { key: shown(key), reason })
}

/// A channel name: not empty, at most [`MAX_CHANNEL_BYTES`], no control characters.
pub(crate) fn check_channel(channel: &str) -> Result<(), StateError> {
    let reason = if channel.is_empty() {
        "is empty"
    } else if channel.len() > MAX_CHANNEL_BYTES {
        "is longer than 128 bytes"
    } else if channel.chars().any(char::is_control) {
        "holds a control character"
    } else {
        return Ok(());
    };
    Err(StateError::InvalidChannel { channel: shown(channel), reason })
}

/// A TTL: more than zero, at most [`MAX_TTL`].
pub(crate) fn check_ttl(key: &str, ttl: Duration) -> Result<(), StateError> {
    if ttl.is_zero() || ttl > MAX_TTL {
        return Err(StateError::InvalidTtl { key: shown(key), ttl, max: MAX_TTL });
    }
    Ok(())
}

/// A value: at most [`MAX_VALUE_BYTES`].
pub(crate) fn check_value(key: &str, value: &[u8]) -> Result<(), StateError> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(StateError::ValueTooLarge {
            key: shown(key),
            len: value.len(),
            max: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// A message: at most [`MAX_PAYLOAD_BYTES`].
pub(crate) fn check_payload(channel: &str, payload: &[u8]) -> Result<(), StateError> {
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(StateError::PayloadTooLarge {
            channel: shown(channel),
            len: payload.len(),
            max: MAX_PAYLOAD_BYTES,
        });
    }
    Ok(())
}

/// A TTL in whole milliseconds, at least one (Redis's `PX`).
pub(crate) fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// A counter's value as it is stored: decimal ASCII, as Redis keeps one.
pub(crate) fn counter_text(n: i64) -> String {
    n.to_string()
}

/// A stored counter, read as Redis reads one: a decimal integer in its one canonical form (no
/// sign but `-`, no leading zeros, no spaces), which is what [`counter_text`] writes.
pub(crate) fn read_counter(value: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(value).ok()?;
    let n: i64 = text.parse().ok()?;
    (counter_text(n) == text).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_message_fits_a_notify_with_the_longest_channel() {
        use base64::Engine as _;
        let payload = vec![0xffu8; MAX_PAYLOAD_BYTES];
        let channel = "c".repeat(MAX_CHANNEL_BYTES);
        let text =
            format!("{channel}\n{}", base64::engine::general_purpose::STANDARD.encode(&payload));
        assert!(text.len() < 8000, "{}", text.len());
    }

    #[test]
    fn keys_and_channels_are_bounded() {
        assert!(check_key("approval:abc").is_ok());
        assert!(check_key(&"k".repeat(MAX_KEY_BYTES)).is_ok());
        for bad in ["", "a\nb", "nul\0", &"k".repeat(MAX_KEY_BYTES + 1)] {
            assert!(matches!(check_key(bad), Err(StateError::InvalidKey { .. })), "{bad:?}");
        }
        assert!(check_channel("list_changed").is_ok());
        for bad in ["", "a\nb", &"c".repeat(MAX_CHANNEL_BYTES + 1)] {
            assert!(
                matches!(check_channel(bad), Err(StateError::InvalidChannel { .. })),
                "{bad:?}"
            );
        }
        assert!(check_ttl("k", Duration::ZERO).is_err());
        assert!(check_ttl("k", MAX_TTL + Duration::from_millis(1)).is_err());
        assert!(check_ttl("k", Duration::from_nanos(1)).is_ok());
        assert_eq!(millis(Duration::from_nanos(1)), 1);
    }

    #[test]
    fn a_counter_is_read_in_its_canonical_form_only() {
        assert_eq!(read_counter(b"42"), Some(42));
        assert_eq!(read_counter(b"-7"), Some(-7));
        assert_eq!(read_counter(b"0"), Some(0));
        for bad in
            [&b"+1"[..], b"01", b" 1", b"1 ", b"-0", b"", b"x", b"\xff", b"99999999999999999999"]
        {
            assert_eq!(read_counter(bad), None, "{bad:?}");
        }
    }
}
