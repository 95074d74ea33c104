//! `policy`'s options: `default`, `default_requests`, `trust` and `rules` (each rule's
//! `tools`, `servers`, `events`, `principals`, `groups`, `when`, `annotations`, `decision` and
//! `reason`), each problem reported with its path.

use super::*;

impl Policy {
    /// Builds it from its `[[pipeline]]` entry.
    pub fn from_config(entry: &InterceptorConfig) -> Result<Policy, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(&["default", "default_requests", "trust", "rules"]);
        let default = match options.string("default") {
            None => Decision::Allow,
            Some(text) => {
                let path = options.at("default");
                decision(&mut options, &path, text).unwrap_or(Decision::Allow)
            }
        };
        let default_requests = match options.string("default_requests") {
            None => Decision::Allow,
            Some(text) => {
                let path = options.at("default_requests");
                match decision(&mut options, &path, text) {
                    Some(Decision::Ask) => {
                        options.error(
                            &path,
                            "`ask` holds tool calls for approval; other requests are allowed \
                             or denied (use allow or deny)",
                        );
                        Decision::Allow
                    }
                    other => other.unwrap_or(Decision::Allow),
                }
            }
        };
        let mut trust = BTreeMap::new();
        if let Some(table) = options.table("trust") {
            for (server, level) in table {
                let path = format!("{}.{server}", options.at("trust"));
                let level = match level.as_str() {
                    Some("trusted") => Trust::Trusted,
                    Some("standard") => Trust::Standard,
                    Some("untrusted") => Trust::Untrusted,
                    Some("sandboxed") => Trust::Sandboxed,
                    _ => {
                        options.error(
                            &path,
                            format!(
                                "expected trusted, standard, untrusted or sandboxed, found {level}"
                            ),
                        );
                        continue;
                    }
                };
                trust.insert(server.clone(), level);
            }
        }
        let mut rules = Vec::new();
        match options.get("rules") {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("{}[{i}]", options.at("rules"));
                    match item.as_object() {
                        Some(table) => {
                            if let Some(rule) = parse_rule(&mut options, &path, i, table) {
                                rules.push(rule);
                            }
                        }
                        None => options.error(&path, format!("expected a table, found {item}")),
                    }
                }
            }
            Some(other) => {
                let path = options.at("rules");
                options.error(&path, format!("expected an array of tables, found {other}"));
            }
        }
        let (request_events, list_events) = hooked_events(&rules, default_requests);
        let mut hooks =
            vec![Hook::new(request_events, Phase::Request).expect("patterns that compiled above")];
        hooks.push(Hook::new(list_events, Phase::Response).expect("literal events"));
        // A mutation: it rewrites lists. Security: fails closed (the default).
        let descriptor = Descriptor::new(KIND, KIND, InterceptorType::Mutation, hooks);
        let descriptor = options.configure(descriptor, entry);
        options.finish(descriptor, |descriptor| Policy {
            descriptor,
            rules,
            default,
            default_requests,
            trust,
        })
    }
}

fn decision(options: &mut Options<'_>, path: &str, text: &str) -> Option<Decision> {
    match text {
        "allow" => Some(Decision::Allow),
        "deny" => Some(Decision::Deny),
        "ask" => Some(Decision::Ask),
        other => {
            options.error(path, format!("expected allow, deny or ask, found {other:?}"));
            None
        }
    }
}

fn parse_rule(
    options: &mut Options<'_>,
    path: &str,
    index: usize,
    table: &Map<String, Value>,
) -> Option<Rule> {
    let mut rule = Options::new(path, table);
    rule.only(&[
        "events",
        "servers",
        "tools",
        "principals",
        "groups",
        "when",
        "annotations",
        "decision",
        "reason",
    ]);
    let event_patterns = rule.strings("events");
    let events = globs(&mut rule, "events");
    if let Some(Some(set)) = &events {
        for (i, pattern) in event_patterns.iter().enumerate() {
            let one = Glob::new(pattern).map(|g| g.compile_matcher());
            if one.is_ok_and(|m| !InterceptionEvent::ALL.iter().any(|e| m.is_match(e.as_str()))) {
                let at = format!("{}[{i}]", rule.at("events"));
                let known: Vec<&str> = InterceptionEvent::ALL.iter().map(|e| e.as_str()).collect();
                rule.error(&at, format!("matches no event (events: {})", known.join(", ")));
            }
        }
        let beyond_calls = InterceptionEvent::ALL
            .iter()
            .filter(|e| **e != InterceptionEvent::ToolsCall && set.is_match(e.as_str()))
            .map(|e| e.as_str())
            .collect::<Vec<_>>();
        if !beyond_calls.is_empty() {
            for key in ["when", "annotations"] {
                if table.contains_key(key) {
                    let at = rule.at(key);
                    rule.error(
                        &at,
                        format!(
                            "`{key}` is about a tool call's arguments and tool, and this rule is \
                             also about {}",
                            beyond_calls.join(", ")
                        ),
                    );
                }
            }
            if rule.get("decision").and_then(Value::as_str) == Some("ask") {
                let at = rule.at("decision");
                rule.error(
                    &at,
                    format!(
                        "`ask` holds tool calls for approval; this rule is also about {} \
                         (use allow or deny)",
                        beyond_calls.join(", ")
                    ),
                );
            }
        }
    }
    let servers = globs(&mut rule, "servers");
    let tools = globs(&mut rule, "tools");
    let principals = principals(&mut rule);
    let groups = callers_globs(&mut rule, "groups");
    let decided = match rule.string("decision") {
        Some(text) => {
            let at = rule.at("decision");
            decision(&mut rule, &at, text)
        }
        None => {
            rule.error(path, "missing `decision` (allow, deny or ask)");
            None
        }
    };
    let reason = rule.string("reason").map(str::to_owned);
    let mut when = Vec::new();
    match rule.get("when") {
        None => {}
        Some(Value::Object(one)) => {
            let at = rule.at("when");
            when.extend(condition(&mut rule, &at, one));
        }
        Some(Value::Array(many)) => {
            for (i, item) in many.iter().enumerate() {
                let at = format!("{}[{i}]", rule.at("when"));
                match item.as_object() {
                    Some(one) => when.extend(condition(&mut rule, &at, one)),
                    None => rule.error(&at, "expected a table"),
                }
            }
        }
        Some(_) => {
            let at = rule.at("when");
            rule.error(&at, "expected a table or an array of tables");
        }
    }
    let mut annotations = Annotations::default();
    if let Some(table) = rule.table("annotations") {
        for (key, value) in table {
            let at = format!("{}.{key}", rule.at("annotations"));
            let Some(flag) = value.as_bool() else {
                rule.error(&at, "expected true or false");
                continue;
            };
            match key.as_str() {
                "read_only" => annotations.read_only = Some(flag),
                "destructive" => annotations.destructive = Some(flag),
                "idempotent" => annotations.idempotent = Some(flag),
                "open_world" => annotations.open_world = Some(flag),
                _ => rule.error(
                    &at,
                    "unknown annotation (expected read_only, destructive, idempotent, open_world)",
                ),
            }
        }
    }
    let ok = rule.errors.is_empty();
    options.errors.append(&mut rule.errors);
    Some(Rule {
        label: format!("rules[{index}]"),
        events: events?,
        event_patterns,
        servers: servers?,
        tools: tools?,
        principals: principals?,
        groups: groups?,
        when,
        annotations,
        decision: decided?,
        reason,
    })
    .filter(|_| ok)
}

fn globs(rule: &mut Options<'_>, key: &str) -> Option<Option<GlobSet>> {
    let patterns = rule.strings(key);
    if patterns.is_empty() {
        return Some(None);
    }
    let mut set = GlobSetBuilder::new();
    for (i, pattern) in patterns.iter().enumerate() {
        match Glob::new(pattern) {
            Ok(glob) => {
                set.add(glob);
            }
            Err(error) => {
                let at = format!("{}[{i}]", rule.at(key));
                rule.error(&at, format!("invalid glob {pattern:?}: {}", error.kind()));
                return None;
            }
        }
    }
    set.build().ok().map(Some)
}

/// `principals`: each pattern with a `:` for `kind:id`, each without for an authenticated
/// caller's id (see `Principal::is_authenticated`). `Some(None)` when left out.
fn principals(rule: &mut Options<'_>) -> Option<Option<Principals>> {
    if !named_someone(rule, "principals") {
        return None;
    }
    let patterns = rule.strings("principals");
    if patterns.is_empty() {
        return Some(None);
    }
    let (mut qualified, mut bare) = (GlobSetBuilder::new(), GlobSetBuilder::new());
    let mut ok = true;
    for (i, pattern) in patterns.iter().enumerate() {
        let at = format!("{}[{i}]", rule.at("principals"));
        match Glob::new(pattern) {
            Ok(glob) if pattern.contains(':') => {
                qualified.add(glob);
            }
            Ok(glob) => {
                bare.add(glob);
            }
            Err(error) => {
                rule.error(&at, format!("invalid glob {pattern:?}: {}", error.kind()));
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }
    match (qualified.build(), bare.build()) {
        (Ok(qualified), Ok(bare)) => Some(Some(Principals { qualified, bare })),
        _ => None,
    }
}

/// The globs of `key` (`groups`), which must name someone when present.
fn callers_globs(rule: &mut Options<'_>, key: &str) -> Option<Option<GlobSet>> {
    if !named_someone(rule, key) {
        return None;
    }
    globs(rule, key)
}

/// Whether `key` (`principals` or `groups`), when given, is a list that names someone: an
/// empty list is refused rather than read as "anyone", the opposite of what it says.
fn named_someone(rule: &mut Options<'_>, key: &str) -> bool {
    if let Some(Value::Array(items)) = rule.get(key)
        && items.is_empty()
    {
        let at = rule.at(key);
        rule.error(&at, "an empty list names nobody; leave it out to mean anyone");
        return false;
    }
    true
}

fn condition(rule: &mut Options<'_>, path: &str, table: &Map<String, Value>) -> Option<Condition> {
    let mut one = Options::new(path, table);
    one.only(&["path", "equals", "matches", "one_of"]);
    let field = one.string("path");
    if field.is_none() && one.get("path").is_none() {
        one.error(path, "missing `path` (the argument to look at, such as \"options.force\")");
    }
    let tests: Vec<&str> =
        ["equals", "matches", "one_of"].into_iter().filter(|k| table.contains_key(*k)).collect();
    let test = match tests.as_slice() {
        ["equals"] => table.get("equals").cloned().map(Test::Equals),
        ["matches"] => match one.string("matches").map(Regex::new) {
            Some(Ok(regex)) => Some(Test::Matches(regex)),
            Some(Err(error)) => {
                let at = one.at("matches");
                one.error(&at, format!("invalid regex: {error}"));
                None
            }
            None => None,
        },
        ["one_of"] => match table.get("one_of") {
            Some(Value::Array(items)) => Some(Test::OneOf(items.clone())),
            _ => {
                let at = one.at("one_of");
                one.error(&at, "expected an array");
                None
            }
        },
        _ => {
            one.error(path, "needs exactly one of `equals`, `matches`, `one_of`");
            None
        }
    };
    let ok = one.errors.is_empty();
    rule.errors.append(&mut one.errors);
    let path = field?.split('.').map(str::to_owned).collect();
    Some(Condition { path, test: test? }).filter(|_| ok)
}
