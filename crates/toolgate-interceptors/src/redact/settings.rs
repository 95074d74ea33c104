//! `redact`'s options: which detectors (`detectors`, `exclude`, `custom`) and where
//! (`results`, `arguments`), each problem reported with its path.

use serde_json::Value;
use toolgate_config::InterceptorConfig;
use toolgate_secrets::{Custom, Selection};

use crate::options::Options;

/// Every option `redact` takes.
pub(super) const OPTIONS: &[&str] = &["detectors", "exclude", "custom", "results", "arguments"];

/// The keys of one `custom` entry.
const CUSTOM_KEYS: &[&str] = &["name", "regex"];

/// What an entry asks for.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) selection: Selection,
    pub(super) results: bool,
    pub(super) arguments: bool,
}

/// Reads the options of `entry` into `options`' errors and the settings.
pub(super) fn read(options: &mut Options<'_>) -> Settings {
    options.only(OPTIONS);
    let mut selection = match options.get("detectors") {
        None => Selection::all(),
        Some(_) => names(options, "detectors"),
    };
    if options.get("exclude").is_some() {
        let excluded = names(options, "exclude");
        let names: Vec<&str> = excluded.builtins().map(|kind| kind.name()).collect();
        selection.exclude(&names).expect("names of built-in kinds");
    }
    for custom in customs(options) {
        if let Err(error) = selection.add_custom(custom.1) {
            let path = custom.0;
            options.error(&path, error.to_string());
        }
    }
    let results = options.boolean("results", true);
    let arguments = options.boolean("arguments", false);
    if !results && !arguments {
        let path = options.at("results");
        options.error(&path, "with `arguments = false` too, this entry redacts nothing");
    }
    if selection.is_empty() && options.errors.is_empty() {
        let path = options.at("detectors");
        options.error(&path, "no detector is left (list kinds, or add `custom` ones)");
    }
    Settings { selection, results, arguments }
}

/// The detectors `entry` looks for, its options' errors ignored (`build_pipeline` reports
/// them).
pub(super) fn selection_of(entry: &InterceptorConfig) -> Selection {
    let mut options = Options::new(entry.path.clone(), &entry.options);
    read(&mut options).selection
}

/// A list of kind names at `key`, each checked; the valid ones.
fn names(options: &mut Options<'_>, key: &str) -> Selection {
    let items = options.strings(key);
    let mut valid = Vec::new();
    for (i, name) in items.iter().enumerate() {
        match Selection::from_names(&[name.as_str()]) {
            Ok(_) => valid.push(name.as_str()),
            Err(error) => {
                let path = format!("{}[{i}]", options.at(key));
                options.error(&path, error.to_string());
            }
        }
    }
    Selection::from_names(&valid).expect("each name parsed alone")
}

/// `custom = [{ name = "...", regex = "..." }]`: each valid one, with its path.
fn customs(options: &mut Options<'_>) -> Vec<(String, Custom)> {
    let Some(value) = options.get("custom") else { return Vec::new() };
    let Value::Array(items) = value else {
        let path = options.at("custom");
        options.error(
            &path,
            format!(
                "expected an array of tables ({{ name = \"...\", regex = \"...\" }}), found {value}"
            ),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{}[{i}]", options.at("custom"));
        let Value::Object(table) = item else {
            options.error(
                &at,
                format!("expected a table {{ name = \"...\", regex = \"...\" }}, found {item}"),
            );
            continue;
        };
        for key in table.keys().filter(|k| !CUSTOM_KEYS.contains(&k.as_str())) {
            options.error(&format!("{at}.{key}"), "unknown key (expected name, regex)");
        }
        let text = |options: &mut Options<'_>, key: &str| match table.get(key) {
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                options.error(&format!("{at}.{key}"), format!("expected a string, found {other}"));
                None
            }
            None => {
                options.error(&at, format!("missing `{key}`"));
                None
            }
        };
        let (Some(name), Some(regex)) = (text(options, "name"), text(options, "regex")) else {
            continue;
        };
        match Custom::new(&name, &regex) {
            Ok(custom) => out.push((format!("{at}.name"), custom)),
            Err(error @ toolgate_secrets::DetectorError::BadRegex { .. }) => {
                options.error(&format!("{at}.regex"), error.to_string());
            }
            Err(error) => options.error(&format!("{at}.name"), error.to_string()),
        }
    }
    out
}
