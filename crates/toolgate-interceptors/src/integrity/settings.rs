//! What the config says about integrity: the actions for drift, unknown tools and poisoning
//! findings (for the whole interceptor, per server), and operators' overrides of tools.

use serde_json::{Map, Value};
use toolgate_core::mcp;
use toolgate_integrity::scan::Severity;

use crate::options::Options;

/// What happens to a tool that changed since it was pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnDrift {
    Audit,
    Warn,
    Block,
}

/// What happens to a tool with no pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnUnknown {
    Allow,
    Warn,
    Block,
    Quarantine,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Actions {
    pub(super) drift: OnDrift,
    pub(super) unknown: OnUnknown,
    /// Findings of the poisoning scan at or above this severity are reported (`None`: off).
    pub(super) report: Option<Severity>,
    /// Findings at or above this severity withhold the tool (`None`: never).
    pub(super) quarantine: Option<Severity>,
}

impl Actions {
    /// Whether a tool of such a server needs its pin to be let through: its server withholds
    /// drifted tools or tools it has not pinned. With the lock gone, such a tool cannot be
    /// checked and is withheld.
    pub(super) fn needs_pin(&self) -> bool {
        self.drift == OnDrift::Block
            || matches!(self.unknown, OnUnknown::Block | OnUnknown::Quarantine)
    }
}

pub(super) const DEFAULT_ACTIONS: Actions = Actions {
    drift: OnDrift::Block,
    unknown: OnUnknown::Warn,
    report: Some(Severity::Medium),
    quarantine: Some(Severity::High),
};

/// An operator's word about one tool: what the model is shown and what `policy` trusts.
#[derive(Debug, Clone, Default)]
pub(super) struct Override {
    title: Option<String>,
    description: Option<String>,
    /// Annotation keys (MCP's names) and their values, each replacing the server's.
    annotations: Map<String, Value>,
}

impl Override {
    /// `tool` as the operator says it is.
    pub(super) fn apply(&self, tool: &mut mcp::Tool) {
        if let Some(title) = &self.title {
            tool.title = Some(title.clone());
        }
        if let Some(description) = &self.description {
            tool.description = Some(description.clone().into());
        }
        if !self.annotations.is_empty() {
            let mut annotations = tool
                .annotations
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok())
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            annotations.extend(self.annotations.clone());
            tool.annotations = serde_json::from_value(Value::Object(annotations)).ok();
        }
    }
}

/// The annotation keys an override may set, and whether each is a flag.
const ANNOTATION_KEYS: [(&str, bool); 5] = [
    ("title", false),
    ("readOnlyHint", true),
    ("destructiveHint", true),
    ("idempotentHint", true),
    ("openWorldHint", true),
];

pub(super) fn parse_override(
    options: &mut Options<'_>,
    path: &str,
    value: &Value,
) -> Option<Override> {
    let Some(table) = value.as_object() else {
        options.error(path, format!("expected a table, found {value}"));
        return None;
    };
    let mut one = Override::default();
    let mut ok = true;
    for (key, value) in table {
        let at = format!("{path}.{key}");
        match (key.as_str(), value) {
            ("title", Value::String(text)) => one.title = Some(text.clone()),
            ("description", Value::String(text)) => one.description = Some(text.clone()),
            ("annotations", Value::Object(annotations)) => {
                for (name, value) in annotations {
                    match ANNOTATION_KEYS.iter().find(|(known, _)| known == name) {
                        Some((_, true)) if value.is_boolean() => {}
                        Some((_, false)) if value.is_string() => {}
                        Some((_, flag)) => {
                            let wanted = if *flag { "true or false" } else { "a string" };
                            options.error(
                                &format!("{at}.{name}"),
                                format!("expected {wanted}, found {value}"),
                            );
                            ok = false;
                            continue;
                        }
                        None => {
                            let known: Vec<&str> =
                                ANNOTATION_KEYS.iter().map(|(k, _)| *k).collect();
                            options.error(
                                &format!("{at}.{name}"),
                                format!(
                                    "unknown annotation (expected one of: {})",
                                    known.join(", ")
                                ),
                            );
                            ok = false;
                            continue;
                        }
                    }
                    one.annotations.insert(name.clone(), value.clone());
                }
            }
            ("title" | "description", other) => {
                options.error(&at, format!("expected a string, found {other}"));
                ok = false;
            }
            ("annotations", other) => {
                options.error(&at, format!("expected a table, found {other}"));
                ok = false;
            }
            _ => {
                options.error(
                    &at,
                    "unknown option (expected one of: title, description, annotations)",
                );
                ok = false;
            }
        }
    }
    ok.then_some(one)
}

/// `drift` and `unknown` of `table`, over `base`.
pub(super) fn actions(
    options: &mut Options<'_>,
    at: &str,
    table: &Map<String, Value>,
    base: Actions,
) -> Actions {
    let mut actions = base;
    if let Some(value) = table.get("drift") {
        match value.as_str() {
            Some("audit") => actions.drift = OnDrift::Audit,
            Some("warn") => actions.drift = OnDrift::Warn,
            Some("block") => actions.drift = OnDrift::Block,
            _ => options.error(
                &format!("{at}.drift"),
                format!("expected audit, warn or block, found {value}"),
            ),
        }
    }
    if let Some(value) = table.get("unknown") {
        match value.as_str() {
            Some("allow") => actions.unknown = OnUnknown::Allow,
            Some("warn") => actions.unknown = OnUnknown::Warn,
            Some("block") => actions.unknown = OnUnknown::Block,
            Some("quarantine") => actions.unknown = OnUnknown::Quarantine,
            _ => options.error(
                &format!("{at}.unknown"),
                format!("expected allow, warn, block or quarantine, found {value}"),
            ),
        }
    }
    if let Some(value) = table.get("poisoning") {
        let at = format!("{at}.poisoning");
        match value.as_object() {
            Some(table) => {
                for (key, value) in table {
                    let severity = match value.as_str() {
                        Some("off") => None,
                        Some("low") => Some(Severity::Low),
                        Some("medium") => Some(Severity::Medium),
                        Some("high") => Some(Severity::High),
                        _ => {
                            let message =
                                format!("expected low, medium, high or off, found {value}");
                            options.error(&format!("{at}.{key}"), message);
                            continue;
                        }
                    };
                    match key.as_str() {
                        "report" => actions.report = severity,
                        "quarantine" => actions.quarantine = severity,
                        _ => options.error(
                            &format!("{at}.{key}"),
                            "unknown option (expected one of: report, quarantine)",
                        ),
                    }
                }
            }
            None => options.error(&at, format!("expected a table, found {value}")),
        }
    }
    actions
}
