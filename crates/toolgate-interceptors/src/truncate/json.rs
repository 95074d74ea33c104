//! Shortening JSON so that it stays JSON: arrays keep their first items, long strings their
//! beginning, objects every key (their values share what is left), and every cut is listed
//! with its place (a JSON pointer), what was kept and what there was.
//!
//! Sizes are bytes of compact JSON; [`shrink`] aims at a size, and the caller checks the real
//! cost (tokens) of what came out, aiming lower when it is still too much.

use serde::Serialize;
use serde_json::{Map, Value};

/// One cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Omission {
    /// Where (a JSON pointer into the value; `""` is the value itself).
    pub path: String,
    /// How many items (arrays) or characters (strings) were kept...
    pub kept: usize,
    /// ...of how many.
    pub total: usize,
    /// `items` or `chars`.
    pub unit: &'static str,
}

impl Omission {
    /// In words: `/entities: 12 of 480 items`.
    pub fn describe(&self) -> String {
        let path = if self.path.is_empty() { "(root)" } else { &self.path };
        format!("{path}: {} of {} {}", self.kept, self.total, self.unit)
    }
}

/// The size of `value` as compact JSON, in bytes (strings counted without escapes).
pub fn size(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => s.len() + 2,
        // Brackets and commas: one more than the items, at least two.
        Value::Array(items) => 1 + items.len().max(1) + items.iter().map(size).sum::<usize>(),
        Value::Object(map) => {
            1 + map.len().max(1) + map.iter().map(|(k, v)| k.len() + 3 + size(v)).sum::<usize>()
        }
    }
}

/// [`size`], when it is at most `cap`; otherwise some number over `cap`: counting stops as soon
/// as `cap` is passed, so sizing a huge value against a small target costs about the target.
pub fn size_up_to(value: &Value, cap: usize) -> usize {
    match value {
        Value::Array(items) => {
            let mut total = 1 + items.len().max(1);
            for item in items {
                if total > cap {
                    break;
                }
                total += size_up_to(item, cap - total);
            }
            total
        }
        Value::Object(map) => {
            let mut total = 1 + map.len().max(1);
            for (key, child) in map {
                if total > cap {
                    break;
                }
                total += key.len() + 3;
                total += size_up_to(child, cap.saturating_sub(total));
            }
            total
        }
        other => size(other),
    }
}

/// What the end of a cut string says.
const CUT_STRING: &str = "…";

/// `value` shortened to about `target` bytes of compact JSON, and what was cut.
pub fn shrink(value: &Value, target: usize) -> (Value, Vec<Omission>) {
    let mut omissions = Vec::new();
    let shrunk = shrink_into(value, target, &mut String::new(), &mut omissions);
    (shrunk, omissions)
}

fn shrink_into(
    value: &Value,
    target: usize,
    path: &mut String,
    omissions: &mut Vec<Omission>,
) -> Value {
    if size_up_to(value, target) <= target {
        return value.clone();
    }
    match value {
        Value::String(text) => {
            let room = target.saturating_sub(2 + CUT_STRING.len()).max(16).min(text.len());
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            omissions.push(Omission {
                path: path.clone(),
                kept: text[..end].chars().count(),
                total: text.chars().count(),
                unit: "chars",
            });
            Value::String(format!("{}{CUT_STRING}", &text[..end]))
        }
        Value::Array(items) => {
            let room = target.saturating_sub(2);
            let mut used = 0;
            let mut kept = Vec::new();
            for item in items {
                let cost = size_up_to(item, room.saturating_sub(used)) + 1;
                if used + cost > room {
                    break;
                }
                used += cost;
                kept.push(item.clone());
            }
            if kept.is_empty()
                && let Some(first) = items.first()
            {
                let mark = path.len();
                path.push_str("/0");
                kept.push(shrink_into(first, room.saturating_sub(1), path, omissions));
                path.truncate(mark);
            }
            if kept.len() < items.len() {
                omissions.push(Omission {
                    path: path.clone(),
                    kept: kept.len(),
                    total: items.len(),
                    unit: "items",
                });
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            let overhead: usize = 2 + map.keys().map(|k| k.len() + 4).sum::<usize>();
            let mut room = target.saturating_sub(overhead);
            // Small values are kept whole; the big ones share what is left equally.
            let mut by_size: Vec<(usize, &String)> =
                map.iter().map(|(k, v)| (size_up_to(v, room), k)).collect();
            by_size.sort();
            let mut allowance: Map<String, Value> = Map::new();
            let mut left = by_size.len();
            for (cost, key) in by_size {
                let share = room / left.max(1);
                let allowed = cost.min(share);
                allowance.insert(key.clone(), Value::from(allowed));
                room = room.saturating_sub(allowed);
                left -= 1;
            }
            let mut out = Map::new();
            for (key, child) in map {
                let allowed = allowance[key].as_u64().unwrap_or(0) as usize;
                let mark = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                out.insert(key.clone(), shrink_into(child, allowed, path, omissions));
                path.truncate(mark);
            }
            Value::Object(out)
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn size_is_the_length_of_compact_json() {
        for value in [
            json!(null),
            json!(false),
            json!(12.5),
            json!("abc"),
            json!([1, [2, 3], {}]),
            json!({"a": {"b": [true, null]}, "c": "d"}),
        ] {
            assert_eq!(size(&value), value.to_string().len(), "{value}");
        }
    }

    #[test]
    fn arrays_keep_their_first_items_and_say_how_many_there_were() {
        let value =
            json!({"items": (0..100).map(|i| json!({"id": i})).collect::<Vec<_>>(), "count": 100});
        let (shrunk, omissions) = shrink(&value, 200);
        assert!(shrunk.to_string().len() <= 200, "{shrunk}");
        let items = shrunk["items"].as_array().unwrap();
        assert!(!items.is_empty());
        assert_eq!(items[0], json!({"id": 0}));
        assert_eq!(shrunk["count"], json!(100));
        assert_eq!(
            omissions,
            vec![Omission { path: "/items".into(), kept: items.len(), total: 100, unit: "items" }]
        );
    }

    #[test]
    fn long_strings_keep_their_beginning_on_a_character_boundary() {
        let value = json!({"text": "é".repeat(1000)});
        let (shrunk, omissions) = shrink(&value, 300);
        let text = shrunk["text"].as_str().unwrap();
        assert!(text.ends_with(CUT_STRING));
        assert!(text.starts_with("éé"));
        assert_eq!(omissions[0].path, "/text");
        assert_eq!(omissions[0].total, 1000);
        assert_eq!(omissions[0].unit, "chars");
    }

    #[test]
    fn a_cut_inside_a_character_keeps_less_never_more() {
        // 50 bytes leave 45 for the text: inside the twelfth four-byte character, so eleven
        // are kept (44 bytes), not twelve (48, over the room).
        let (shrunk, omissions) = shrink(&json!("😀".repeat(100)), 50);
        let text = shrunk.as_str().unwrap().strip_suffix(CUT_STRING).unwrap();
        assert_eq!(text, "😀".repeat(11));
        assert_eq!(omissions[0].kept, 11);
    }

    #[test]
    fn a_first_item_too_big_alone_is_shortened_itself() {
        let value = json!([{"blob": "x".repeat(5000)}, {"blob": "y"}]);
        let (shrunk, omissions) = shrink(&value, 500);
        assert_eq!(shrunk.as_array().unwrap().len(), 1);
        assert!(shrunk.to_string().len() < 600, "{shrunk}");
        let paths: Vec<&str> = omissions.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(paths, ["/0/blob", ""]);
    }

    #[test]
    fn small_values_are_kept_whole_beside_a_big_one() {
        let value = json!({"a": 1, "b": "short", "c": "z".repeat(10_000), "d": [1, 2, 3]});
        let (shrunk, _) = shrink(&value, 1000);
        assert_eq!(shrunk["a"], json!(1));
        assert_eq!(shrunk["b"], json!("short"));
        assert_eq!(shrunk["d"], json!([1, 2, 3]));
        let keys: Vec<&String> = shrunk.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b", "c", "d"]);
    }

    #[test]
    fn size_up_to_is_exact_up_to_its_cap_and_over_it_past() {
        let ones = json!(vec![1; 40]);
        for value in [
            json!({"a": [1, 2, {"b": "cccc"}], "d": null, "e": [[], {}]}),
            // Containers inside containers, whose counting stops at the cap they are given.
            json!([ones, [ones]]),
            json!({"k": ones, "l": {"m": ones}}),
        ] {
            let exact = size(&value);
            for cap in 0..exact + 5 {
                let counted = size_up_to(&value, cap);
                if exact <= cap {
                    assert_eq!(counted, exact, "{value}, cap {cap}");
                } else {
                    assert!(counted > cap, "{value}, cap {cap}: {counted}");
                }
            }
        }
    }

    #[test]
    fn big_values_of_an_object_share_what_is_left_equally() {
        let value = json!({"a": "x".repeat(1000), "b": "y".repeat(1000), "c": "z".repeat(1000)});
        let (shrunk, omissions) = shrink(&value, 600);
        let kept: Vec<usize> = omissions.iter().map(|o| o.kept).collect();
        assert_eq!(omissions.len(), 3, "{omissions:?}");
        assert!(kept.iter().all(|k| k.abs_diff(kept[0]) <= 1), "{kept:?}");
        let length = shrunk.to_string().len();
        assert!((500..=600).contains(&length), "{length}: {shrunk}");
    }

    #[test]
    fn what_fits_is_left_alone() {
        let value = json!({"a": [1, 2, 3]});
        assert_eq!(shrink(&value, 1000), (value.clone(), Vec::new()));
    }

    #[test]
    fn keys_with_slashes_and_tildes_are_escaped_in_pointers() {
        let value = json!({"a/b~c": "q".repeat(500)});
        let (_, omissions) = shrink(&value, 100);
        assert_eq!(omissions[0].path, "/a~1b~0c");
    }

    #[test]
    fn size_up_to_stops_counting_soon_after_its_cap() {
        // Past the cap by at most one string or one array's brackets and commas, however the
        // arrays nest: a huge value is not counted whole against a small cap.
        let word = json!("b".repeat(30));
        let value = json!(vec![vec![vec![word; 5]; 5]; 20]);
        let exact = size(&value);
        for cap in 0..exact {
            let counted = size_up_to(&value, cap);
            assert!(counted > cap && counted <= cap + 32, "cap {cap}: {counted}");
        }
    }

    #[test]
    fn a_cut_string_fills_its_target_with_its_quotes_and_mark() {
        let (shrunk, omissions) = shrink(&json!("x".repeat(1000)), 100);
        assert_eq!(shrunk.to_string().len(), 100, "{shrunk}");
        assert_eq!(omissions[0].kept, 95);
    }

    #[test]
    fn an_array_keeps_every_first_item_that_fits_its_target() {
        // Ten items are 21 bytes; nine, 19.
        let (shrunk, omissions) = shrink(&json!(vec![1; 10]), 20);
        assert_eq!(shrunk, json!(vec![1; 9]));
        assert_eq!(omissions[0].kept, 9);
    }

    #[test]
    fn an_array_whose_only_item_is_shortened_keeps_every_item() {
        let (shrunk, omissions) = shrink(&json!(["x".repeat(5000)]), 500);
        assert_eq!(shrunk.as_array().unwrap().len(), 1);
        let paths: Vec<&str> = omissions.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(paths, ["/0"], "the string is cut, not the array");
    }

    #[test]
    fn an_object_with_one_long_value_fills_its_target() {
        // The key, its quotes, the colon and the braces are counted once.
        let (shrunk, _) = shrink(&json!({"description": "x".repeat(10_000)}), 500);
        let length = shrunk.to_string().len();
        assert!((495..=500).contains(&length), "{length}: {shrunk}");
    }
}
