//! Counts checked against OpenAI's own tokenizer as tiktoken-rs carries it.

use super::*;

fn samples() -> Vec<String> {
    let mut json = String::from("[");
    for i in 0..400 {
        json.push_str(&format!(
            "{{\"id\":{i},\"path\":\"/srv/data/file_{i}.txt\",\"size\":{},\"ok\":true}},",
            i * 37
        ));
    }
    json.push(']');
    vec![
        String::new(),
        "hello".into(),
        "  leading and trailing spaces  \n\n\n".into(),
        "Grüße aus Köln — naïve café, 東京 and emoji 🦀🚀 mixed\twith\ttabs\r\n".into(),
        "fn main() {\n    println!(\"{}\", 1 + 2);\n}\n".repeat(20),
        "error[E0308]: mismatched types\n  --> src/lib.rs:3:5\n   |\n3  |     x\n".repeat(30),
        "x".repeat(5000),
        format!("start {} end", "9".repeat(3000)),
        json,
    ]
}

#[test]
fn counts_are_tiktokens_counts() {
    let o200k = tiktoken_rs::o200k_base().unwrap();
    let cl100k = tiktoken_rs::cl100k_base().unwrap();
    for text in samples() {
        assert_eq!(
            Encoding::O200kBase.count(&text),
            o200k.encode_ordinary(&text).len(),
            "{text:?}"
        );
        assert_eq!(
            Encoding::Cl100kBase.count(&text),
            cl100k.encode_ordinary(&text).len(),
            "{text:?}"
        );
    }
}

#[test]
fn count_up_to_stops_past_the_limit_and_agrees_below_it() {
    for text in samples() {
        let n = Encoding::O200kBase.count(&text);
        assert_eq!(Encoding::O200kBase.count_up_to(&text, n), Some(n));
        if n > 0 {
            assert_eq!(Encoding::O200kBase.count_up_to(&text, n - 1), None);
            assert!(!Encoding::O200kBase.fits(&text, n - 1));
        }
        assert!(Encoding::O200kBase.fits(&text, n));
    }
}

#[test]
fn a_prefix_within_a_budget_counts_what_it_says_and_is_the_longest() {
    for text in samples() {
        let total = Encoding::O200kBase.count(&text);
        for budget in [0, 1, 5, 37, total.saturating_sub(1), total, total + 10] {
            let (end, count) = Encoding::O200kBase.prefix_within(&text, budget);
            assert!(count <= budget);
            assert_eq!(Encoding::O200kBase.count(&text[..end]), count, "{budget} in {text:?}");
            if budget >= total {
                assert_eq!(end, text.len());
            } else {
                assert!(end < text.len());
            }
            // A text of one huge word still gives as much of it as fits.
            if text.starts_with("xxxx") && budget > 0 {
                assert!(count > 0 && count <= budget, "{budget}: {count}");
            }
        }
    }
}

#[test]
fn encodings_are_named_as_openai_names_them() {
    for encoding in Encoding::ALL {
        assert_eq!(encoding.name().parse::<Encoding>(), Ok(encoding));
    }
    assert_eq!(Encoding::default(), Encoding::O200kBase);
    let err = "p50k_base".parse::<Encoding>().unwrap_err();
    assert!(err.to_string().contains("o200k_base, cl100k_base"), "{err}");
}
