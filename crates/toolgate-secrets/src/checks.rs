//! What a pattern cannot say: checksums (Luhn, IBAN mod-97), a JWT header that decodes to
//! JSON, and the look of random key material. Each check takes the haystack and the span a
//! pattern found, and gives the span to redact, or `None` to drop the candidate.

use std::ops::Range;

/// A check on a candidate: the span to redact, or `None`.
pub(crate) type Check = fn(&str, Range<usize>) -> Option<Range<usize>>;

/// Keeps every candidate as found.
pub(crate) fn any(_: &str, span: Range<usize>) -> Option<Range<usize>> {
    Some(span)
}

/// A JWT: the header (up to the first `.`) is base64url of a JSON object with a string
/// `alg`.
pub(crate) fn jwt(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let token = &text[span.clone()];
    let header = token.split('.').next()?;
    let decoded = base64url(header)?;
    let json: serde_json::Value = serde_json::from_slice(&decoded).ok()?;
    json.get("alg")?.as_str()?;
    Some(span)
}

/// An OpenAI key's body looks random: digits and letters of both cases.
pub(crate) fn openai(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let body = &text[span.clone()]["sk-".len()..];
    looks_random(body).then_some(span)
}

/// A bearer token has digits and letters (`Bearer authentication` is prose).
pub(crate) fn bearer(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let token = &text[span.clone()];
    let digit = token.bytes().any(|b| b.is_ascii_digit());
    let letter = token.bytes().any(|b| b.is_ascii_alphabetic());
    (digit && letter).then_some(span)
}

/// A Google API key is exactly 39 characters: the next one is not part of it.
pub(crate) fn google(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let next = text.as_bytes().get(span.end).copied();
    match next {
        Some(b) if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' => None,
        _ => Some(span),
    }
}

/// An AWS secret key is exactly 40 base64 characters: the next one is not part of it.
pub(crate) fn aws_secret(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let next = text.as_bytes().get(span.end).copied();
    match next {
        Some(b) if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'=') => None,
        _ => Some(span),
    }
}

/// Digits, letters of both cases: what generated key material has and words do not.
fn looks_random(body: &str) -> bool {
    let digit = body.bytes().any(|b| b.is_ascii_digit());
    let upper = body.bytes().any(|b| b.is_ascii_uppercase());
    let lower = body.bytes().any(|b| b.is_ascii_lowercase());
    digit && upper && lower
}

/// File extensions that follow `@` in asset names (`icon@2x.png`), never a top-level domain
/// of an address.
const ASSET_EXTENSIONS: &[&str] =
    &["png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff", "heic"];

/// An e-mail address, unless it is an asset name (`logo@2x.png`) or the `user@host` of a
/// URL (`https://user@host/`, `ssh://git@host/`), which is not an address.
pub(crate) fn email(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let address = &text[span.clone()];
    let tld = address.rsplit('.').next()?;
    if ASSET_EXTENSIONS.iter().any(|ext| tld.eq_ignore_ascii_case(ext)) {
        return None;
    }
    let (local, _) = address.split_once('@')?;
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return None;
    }
    // The whitespace-delimited word it is in: a URL's authority has `://` before it. (The
    // delimiter may be wider than a byte: U+00A0 is whitespace too.)
    let word_start = text[..span.start]
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '(' | '['))
        .map_or(0, |(at, c)| at + c.len_utf8());
    if text[word_start..span.start].contains("://") {
        return None;
    }
    Some(span)
}

/// A card number: 13 to 19 digits, in a run of digit groups of at most 19 digits (a longer
/// number, such as a UUID-like id of digit groups, holds no card), separators (if any) all
/// the same, Luhn-valid, not one digit repeated, and starting with a prefix that
/// card networks issue.
pub(crate) fn card(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    // The whole run of digits and single separators around the candidate.
    let mut start = span.start;
    while start >= 2 && matches!(bytes[start - 1], b' ' | b'-') && bytes[start - 2].is_ascii_digit()
    {
        start -= 2;
        while start > 0 && bytes[start - 1].is_ascii_digit() {
            start -= 1;
        }
    }
    let mut end = span.end;
    while end + 1 < bytes.len()
        && matches!(bytes[end], b' ' | b'-')
        && bytes[end + 1].is_ascii_digit()
    {
        end += 2;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
    }
    let run = bytes[start..end].iter().filter(|b| b.is_ascii_digit()).count();
    if run > 19 {
        return None;
    }
    // Digits beside a decimal point are a fraction or a whole part (`0.4242424242424242`, a
    // float a JSON log line or a result writes), not a card.
    let decimal_point = |at: usize, digit: Option<usize>| {
        bytes.get(at) == Some(&b'.')
            && digit.and_then(|i| bytes.get(i)).is_some_and(u8::is_ascii_digit)
    };
    if (start >= 1 && decimal_point(start - 1, start.checked_sub(2)))
        || decimal_point(end, Some(end + 1))
    {
        return None;
    }
    let candidate = &bytes[span.clone()];
    let mut separators = candidate.iter().filter(|b| !b.is_ascii_digit());
    if let Some(first) = separators.next()
        && separators.any(|b| b != first)
    {
        return None;
    }
    let digits: Vec<u8> =
        candidate.iter().filter(|b| b.is_ascii_digit()).map(|b| b - b'0').collect();
    if !(13..=19).contains(&digits.len()) || digits.iter().all(|d| *d == digits[0]) {
        return None;
    }
    (luhn(&digits) && plausible_iin(&digits)).then_some(span)
}

/// The Luhn checksum of `digits` (most significant first) is valid.
pub(crate) fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether `digits` start with a prefix (issuer identification number) of a card network
/// that issues cards of that length: Visa, Mastercard, American Express, Discover, JCB,
/// Diners Club, UnionPay, Maestro, Mir.
fn plausible_iin(digits: &[u8]) -> bool {
    let prefix = |n: usize| digits[..n].iter().fold(0u32, |acc, d| acc * 10 + u32::from(*d));
    let len = digits.len();
    let p1 = prefix(1);
    let p2 = prefix(2);
    let p3 = prefix(3);
    let p4 = prefix(4);
    match p1 {
        4 => matches!(len, 13 | 16 | 19),
        2 => (2221..=2720).contains(&p4) && len == 16 || (2200..=2204).contains(&p4) && len >= 16,
        5 => (51..=55).contains(&p2) && len == 16 || matches!(p2, 50 | 56..=59) && len >= 12,
        3 => match p2 {
            34 | 37 => len == 15,
            35 => (3528..=3589).contains(&p4) && len >= 16,
            30 => (300..=305).contains(&p3) && len >= 14,
            36 | 38 | 39 => len >= 14,
            _ => false,
        },
        // Discover, UnionPay, Maestro (63xx, 67xx also shorter).
        6 => len >= 16 || matches!(p2, 63 | 67),
        _ => false,
    }
}

/// IBAN lengths by country, from the IBAN registry.
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24),
    ("AE", 23),
    ("AL", 28),
    ("AT", 20),
    ("AZ", 28),
    ("BA", 20),
    ("BE", 16),
    ("BG", 22),
    ("BH", 22),
    ("BI", 27),
    ("BR", 29),
    ("BY", 28),
    ("CH", 21),
    ("CR", 22),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DJ", 27),
    ("DK", 18),
    ("DO", 28),
    ("EE", 20),
    ("EG", 29),
    ("ES", 24),
    ("FI", 18),
    ("FK", 18),
    ("FO", 18),
    ("FR", 27),
    ("GB", 22),
    ("GE", 22),
    ("GI", 23),
    ("GL", 18),
    ("GR", 27),
    ("GT", 28),
    ("HN", 28),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IL", 23),
    ("IQ", 23),
    ("IS", 26),
    ("IT", 27),
    ("JO", 30),
    ("KW", 30),
    ("KZ", 20),
    ("LB", 28),
    ("LC", 32),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("LY", 25),
    ("MC", 27),
    ("MD", 24),
    ("ME", 22),
    ("MK", 19),
    ("MN", 20),
    ("MR", 27),
    ("MT", 31),
    ("MU", 30),
    ("NI", 28),
    ("NL", 18),
    ("NO", 15),
    ("OM", 23),
    ("PK", 24),
    ("PL", 28),
    ("PS", 29),
    ("PT", 25),
    ("QA", 29),
    ("RO", 24),
    ("RS", 22),
    ("RU", 33),
    ("SA", 24),
    ("SC", 31),
    ("SD", 18),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("SO", 23),
    ("ST", 25),
    ("SV", 28),
    ("TL", 23),
    ("TN", 24),
    ("TR", 26),
    ("UA", 29),
    ("VA", 22),
    ("VG", 24),
    ("XK", 20),
    ("YE", 30),
];

/// An IBAN: the pattern finds a country code, two digits and up to 30 more letters and digits
/// (single spaces allowed); this takes exactly as many characters as the country's IBANs
/// have, and checks that no more follow directly and that mod-97 of the rearranged number is
/// 1. The span is cut to the IBAN.
pub(crate) fn iban(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let candidate = &text[span.clone()];
    let country = candidate.get(..2)?;
    let (_, length) = IBAN_LENGTHS.iter().find(|(code, _)| *code == country)?;
    let mut chars = Vec::with_capacity(*length);
    let mut end = span.start;
    for (at, c) in candidate.char_indices() {
        if c == ' ' {
            continue;
        }
        chars.push(c);
        end = span.start + at + c.len_utf8();
        if chars.len() == *length {
            break;
        }
    }
    if chars.len() != *length {
        return None;
    }
    if text.as_bytes().get(end).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    // Move the first four to the end; letters are 10..=35; the number mod 97 must be 1.
    let mut remainder = 0u32;
    for c in chars[4..].iter().chain(&chars[..4]) {
        let value = c.to_digit(36)?;
        remainder =
            if value < 10 { (remainder * 10 + value) % 97 } else { (remainder * 100 + value) % 97 };
    }
    (remainder == 1).then_some(span.start..end)
}

/// Decodes base64url without padding (padding is accepted too); `None` if it is not.
pub(crate) fn base64url(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    // A single leftover character cannot encode a byte.
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(text: &str) -> Vec<u8> {
        text.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect()
    }

    #[test]
    fn luhn_accepts_test_cards_and_refuses_a_changed_digit() {
        assert!(luhn(&digits("4242424242424242")));
        assert!(luhn(&digits("378282246310005")));
        assert!(luhn(&digits("5555555555554444")));
        assert!(!luhn(&digits("4242424242424241")));
        assert!(!luhn(&digits("1234567812345678")));
    }

    #[test]
    fn card_networks_prefixes_and_lengths() {
        assert!(plausible_iin(&digits("4242424242424242")));
        assert!(plausible_iin(&digits("378282246310005")));
        assert!(!plausible_iin(&digits("3782822463100050")), "amex is 15 digits");
        assert!(plausible_iin(&digits("2223003122003222")));
        assert!(plausible_iin(&digits("6011111111111117")));
        assert!(plausible_iin(&digits("3530111333300000")));
        assert!(!plausible_iin(&digits("1700000000000000")), "1 is not a card network's");
        assert!(!plausible_iin(&digits("9999999999999995")));
    }

    #[test]
    fn ibans_are_cut_to_their_country_length_and_checked() {
        let text = "pay GB82 WEST 1234 5698 7654 32 ABCD today";
        let start = text.find("GB82").unwrap();
        let found = iban(text, start..text.find(" today").unwrap()).expect("valid");
        assert_eq!(&text[found], "GB82 WEST 1234 5698 7654 32");
        let wrong = "GB83 WEST 1234 5698 7654 32";
        assert_eq!(iban(wrong, 0..wrong.len()), None, "the check digits do not match");
        let longer = "GB82WEST123456987654321";
        assert_eq!(iban(longer, 0..longer.len()), None, "one character too many");
        let unknown = "ZZ82WEST12345698765432";
        assert_eq!(iban(unknown, 0..unknown.len()), None);
    }

    #[test]
    fn base64url_decodes_with_and_without_padding() {
        assert_eq!(base64url("eyJhbGciOiJIUzI1NiJ9").unwrap(), br#"{"alg":"HS256"}"#);
        assert_eq!(base64url("YQ").unwrap(), b"a");
        assert_eq!(base64url("YQ==").unwrap(), b"a");
        assert_eq!(base64url("Y"), None);
        assert_eq!(base64url("a.b"), None);
        // The URL alphabet's `-` and `_`, and the standard one's `+` and `/`, are 62 and 63.
        assert_eq!(base64url("-_8").unwrap(), [0xfb, 0xff]);
        assert_eq!(base64url("+/8").unwrap(), [0xfb, 0xff]);
    }

    fn whole(text: &str) -> Range<usize> {
        0..text.len()
    }

    #[test]
    fn a_bearer_token_needs_digits_and_letters() {
        for (token, found) in
            [("abc123def456", true), ("abcdefghijkl", false), ("123456789012", false)]
        {
            assert_eq!(bearer(token, whole(token)).is_some(), found, "{token}");
        }
    }

    #[test]
    fn fixed_length_keys_end_where_their_characters_end() {
        let key = "AIzaSyA-1234567890abcdefghijklmnopqrstu";
        for (next, found) in [
            ("", true),
            (" ", true),
            ("\"", true),
            ("a", false),
            ("7", false),
            ("_", false),
            ("-", false),
        ] {
            let text = format!("{key}{next}");
            assert_eq!(google(&text, 0..key.len()).is_some(), found, "google key then {next:?}");
        }
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        for (next, found) in [
            ("", true),
            (",", true),
            ("Q", false),
            ("5", false),
            ("/", false),
            ("+", false),
            ("=", false),
        ] {
            let text = format!("{secret}{next}");
            assert_eq!(
                aws_secret(&text, 0..secret.len()).is_some(),
                found,
                "aws secret then {next:?}"
            );
        }
    }

    #[test]
    fn an_address_local_part_has_no_stray_dots() {
        for (address, found) in [
            ("ada.lovelace@example.com", true),
            (".ada@example.com", false),
            ("ada.@example.com", false),
            ("ada..l@example.com", false),
        ] {
            assert_eq!(email(address, whole(address)).is_some(), found, "{address}");
        }
        let url = "clone ssh://git@example.com/repo";
        let start = url.find("git@").unwrap();
        assert_eq!(email(url, start..start + "git@example.com".len()), None);
        let prose = "write (to ada@example.com) today";
        let start = prose.find("ada@").unwrap();
        assert!(email(prose, start..start + "ada@example.com".len()).is_some());
        // The word may start right after a delimiter that opens the text.
        let quoted = "(ada@example.com)";
        assert!(email(quoted, 1..quoted.len() - 1).is_some());
    }

    /// `digits` (most significant first) with a Luhn check digit appended.
    fn with_check_digit(digits: &str) -> String {
        (0..10)
            .map(|d| format!("{digits}{d}"))
            .find(|n| luhn(&n.bytes().map(|b| b - b'0').collect::<Vec<_>>()))
            .expect("one check digit fits")
    }

    fn is_card(text: &str) -> bool {
        card(text, whole(text)).is_some()
    }

    #[test]
    fn card_numbers_of_each_network_and_length() {
        let cases = [
            ("4242424242424", true),       // Visa, 13
            ("4242424242424242", true),    // Visa, 16
            ("424242424242424242", false), // Visa, 18: not issued
            ("4242424242424242424", true), // Visa, 19
            ("2221000000000000", true),    // Mastercard 2-series
            ("2720990000000000", true),
            ("2721000000000000", false),
            ("222100000000000", false),    // 15
            ("2200000000000000", true),    // Mir, 16
            ("2204000000000000000", true), // Mir, 19
            ("220000000000000", false),    // Mir, 15
            ("2205000000000000", false),
            ("5500000000000000", true), // Mastercard
            ("550000000000000", false), // 15
            ("5000000000000", true),    // Maestro, 13
            ("5900000000000", true),
            ("5200000000000", false),    // Mastercard range, 13
            ("378282246310005", true),   // American Express, 15
            ("3782822463100050", false), // 16
            ("3530111333300000", true),  // JCB
            ("3527000000000000", false),
            ("3590000000000000", false),
            ("30569309025904", true),   // Diners 305, 14
            ("30600000000000", false),  // 306
            ("3056930902590", false),   // 13
            ("36000000000000", true),   // Diners 36, 14
            ("3600000000000", false),   // 13
            ("6011000000000000", true), // Discover, 16
            ("6300000000000", true),    // Maestro 63, 13
            ("6700000000000", true),    // Maestro 67, 13
            ("6000000000000", false),   // 60, 13
            ("1234567890123", false),
        ];
        for (prefix, plausible) in cases {
            let number = with_check_digit(&prefix[..prefix.len() - 1]);
            assert_eq!(number.len(), prefix.len());
            assert_eq!(is_card(&number), plausible, "{number}");
        }
    }

    #[test]
    fn a_card_number_is_a_whole_run_of_digit_groups() {
        let card = "4242 4242 4242 4242";
        assert!(is_card(card));
        assert!(!is_card("4242 4242-4242 4242"), "mixed separators");
        assert!(!is_card(&with_check_digit("42424242424")), "12 digits");
        assert!(!is_card(&with_check_digit("4242424242424242424")), "20 digits");
        // In a longer run of digit groups it is part of another number.
        for text in [
            format!("{card} 1234"),
            format!("1234 {card}"),
            format!("{card}-1234"),
            format!("1234-{card}"),
        ] {
            let start = text.find(card).unwrap();
            assert!(super::card(&text, start..start + card.len()).is_none(), "{text}");
        }
        // A run of 19 digits in all (a card of 16 and a group of 3) may still hold a card.
        let sixteen = with_check_digit("424242424242424");
        let run = format!("{sixteen} 424");
        assert!(super::card(&run, 0..16).is_some(), "{run}");
        // Beside text, not digits, it is found.
        let prose = format!("card: {card}, thanks");
        let start = prose.find(card).unwrap();
        assert!(super::card(&prose, start..start + card.len()).is_some());
        assert!(!is_card("0000000000000000"), "one digit repeated");
        // 12 digits are too few even where a network issues short cards (Maestro's 50).
        assert!(!is_card(&with_check_digit("50000000000")), "12 digits");
    }

    #[test]
    fn digits_beside_a_decimal_point_are_a_number_not_a_card() {
        let card = with_check_digit("424242424242424");
        for text in [
            format!("{{\"duration_ms\":0.{card}}}"),
            format!("{{\"duration_ms\":{card}.25}}"),
            format!("took 12.{card} ms"),
        ] {
            let start = text.find(&card).unwrap();
            assert!(super::card(&text, start..start + card.len()).is_none(), "{text}");
        }
        // A card at the end of a sentence, or after a dot that follows no digit, is a card.
        for text in [format!("card {card}."), format!("card .{card}"), format!("v.{card} x")] {
            let start = text.find(&card).unwrap();
            assert!(super::card(&text, start..start + card.len()).is_some(), "{text}");
        }
    }

    #[test]
    fn the_run_of_digit_groups_ends_at_a_letter() {
        let card = "4242 4242 4242 4242";
        // Several groups before it are all part of the run: 2 + 2 + 16 digits.
        let text = format!("12 34 {card}");
        assert!(super::card(&text, 6..text.len()).is_none(), "{text}");
        // Digits behind a letter are another word, and so are numbers further back: the run
        // is the card alone, or the card and the group right before it.
        for text in [
            format!("1234B {card}"),
            format!("{card} B1234"),
            format!("order 123456, card 12 {card}"),
        ] {
            let start = text.find(card).unwrap();
            assert!(super::card(&text, start..start + card.len()).is_some(), "{text}");
        }
        // A card that ends the text with a separator after it.
        let text = format!("{card} ");
        assert!(super::card(&text, 0..card.len()).is_some(), "{text:?}");
    }

    #[test]
    fn iban_check_uses_letters_as_two_digits() {
        // Germany's published example: digits only after the country code.
        let de = "DE89 3704 0044 0532 0130 00";
        assert!(iban(de, whole(de)).is_some());
        let de_wrong = "DE89 3704 0044 0532 0130 01";
        assert_eq!(iban(de_wrong, whole(de_wrong)), None);
        // The Netherlands' published example: the letters of the bank code count as two digits.
        let nl = "NL91 ABNA 0417 1643 00";
        assert!(iban(nl, whole(nl)).is_some());
        let nl_wrong = "NL91 ABNB 0417 1643 00";
        assert_eq!(iban(nl_wrong, whole(nl_wrong)), None);
    }
}
