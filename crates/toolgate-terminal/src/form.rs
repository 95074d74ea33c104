//! An MCP elicitation (`elicitation/create`) asked at the terminal.
//!
//! Form mode: the server's message, then each field of `requestedSchema` in the order the
//! server wrote them, then a summary to send, edit, decline or cancel. Every field type of the
//! specification (2025-11-25) is asked and checked:
//!
//! | Schema | Asked as | Checked |
//! |---|---|---|
//! | string | text | `minLength`, `maxLength`, `format` email, uri, date, date-time |
//! | number, integer | a number | a number (integer: whole), `minimum`, `maximum` |
//! | boolean | y/n | |
//! | `enum`, `oneOf` (const/title), legacy `enumNames` | one choice, by number or value | one of the options |
//! | array of `enum` or `anyOf` items | choices separated by commas | each an option, `minItems`, `maxItems` |
//!
//! A default is shown in brackets and taken on an empty answer; an empty answer leaves an
//! optional field without a default out, and `:skip` leaves out an optional field that has
//! one. An answer that does not fit is asked again, saying why. `:decline` declines the whole
//! form, `:cancel` or the end of input (Ctrl-D) cancels it.
//!
//! URL mode: the message and the URL (with its host on its own, to be checked), then whether
//! the person accepts (will go there), declines or cancels. Nothing is opened from here.
//!
//! The specification's string `pattern` is not part of it (rmcp's schema has no such field).

use std::borrow::Cow;
use std::io::{self, Write};

use serde_json::{Map, Value};
use toolgate_core::mcp::{
    self, ElicitResult, ElicitationAction, EnumSchema, MultiSelectEnumSchema,
    PrimitiveSchemaDefinition, SingleSelectEnumSchema, StringFormat,
};

use super::{LineInput, Paint, one_line, sanitize};

/// Asks `params` (an `elicitation/create` from the server `from`) on `out`, reading answers
/// from `input`; the answer to send back. Errors are those of reading and writing.
pub(crate) fn ask(
    from: &str,
    params: &mcp::ElicitRequestParams,
    input: &mut dyn LineInput,
    out: &mut dyn Write,
    paint: Paint,
) -> io::Result<ElicitResult> {
    match params {
        mcp::ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
            ask_form(from, message, requested_schema, input, out, paint)
        }
        mcp::ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            ask_url(from, message, url, input, out, paint)
        }
        _ => {
            writeln!(
                out,
                "{} asks in a way this terminal cannot show; cancelled.",
                one_line(from)
            )?;
            Ok(ElicitResult::new(ElicitationAction::Cancel))
        }
    }
}

fn ask_url(
    from: &str,
    message: &str,
    url: &str,
    input: &mut dyn LineInput,
    out: &mut dyn Write,
    paint: Paint,
) -> io::Result<ElicitResult> {
    writeln!(out, "{} asks you to open a web page:", paint.bold(&one_line(from)))?;
    writeln!(out, "{}", indent(&sanitize(message)))?;
    writeln!(out, "  {}", paint.fg(anstyle::AnsiColor::Blue, &one_line(url)))?;
    match url::Url::parse(url) {
        Ok(parsed) => {
            let host = parsed.host_str().unwrap_or("(none)");
            writeln!(out, "  {}", paint.dim(&format!("site: {}", one_line(host))))?;
        }
        Err(error) => {
            writeln!(out, "  {}", paint.dim(&format!("(not a valid URL: {error})")))?;
        }
    }
    loop {
        let prompt = "Open it yourself; then [y] accept  [n] decline  [c] cancel: ";
        let Some(answer) = input.read_line(prompt, out)? else {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        let action = match answer.trim().to_lowercase().as_str() {
            "y" | "yes" | "accept" => ElicitationAction::Accept,
            "n" | "no" | "decline" | ":decline" => ElicitationAction::Decline,
            "c" | "cancel" | ":cancel" => ElicitationAction::Cancel,
            _ => {
                writeln!(out, "  {}", error(paint, "answer y, n or c"))?;
                continue;
            }
        };
        return Ok(ElicitResult::new(action));
    }
}

fn ask_form(
    from: &str,
    message: &str,
    schema: &mcp::ElicitationSchema,
    input: &mut dyn LineInput,
    out: &mut dyn Write,
    paint: Paint,
) -> io::Result<ElicitResult> {
    let fields = fields(schema);
    writeln!(out, "{} asks:", paint.bold(&one_line(from)))?;
    writeln!(out, "{}", indent(&sanitize(message)))?;
    writeln!(
        out,
        "{}",
        paint.dim("  (* required; Enter takes the [default]; :skip, :decline, :cancel)")
    )?;
    let mut answers: Vec<Option<Value>> = fields.iter().map(|f| f.default.clone()).collect();
    loop {
        for (field, answer) in fields.iter().zip(answers.iter_mut()) {
            match ask_field(field, answer.as_ref(), input, out, paint)? {
                Asked::Value(value) => *answer = value,
                Asked::Stop(action) => return Ok(ElicitResult::new(action)),
            }
        }
        let content: Map<String, Value> = fields
            .iter()
            .zip(&answers)
            .filter_map(|(f, a)| Some((f.name.clone(), a.clone()?)))
            .collect();
        if !fields.is_empty() {
            writeln!(out, "{}", paint.bold("Answers:"))?;
            for field in &fields {
                let shown = content.get(&field.name).map_or("(none)".into(), |v| field.show(v));
                writeln!(out, "  {}: {}", field.label(), one_line(&shown))?;
            }
        }
        loop {
            let prompt = format!(
                "Send to {}? [Y] send  [e] edit  [n] decline  [c] cancel: ",
                one_line(from)
            );
            let Some(answer) = input.read_line(&prompt, out)? else {
                return Ok(ElicitResult::new(ElicitationAction::Cancel));
            };
            match answer.trim().to_lowercase().as_str() {
                "" | "y" | "yes" | "send" => {
                    return Ok(ElicitResult::new(ElicitationAction::Accept)
                        .with_content(Value::Object(content)));
                }
                "e" | "edit" => break,
                "n" | "no" | "decline" | ":decline" => {
                    return Ok(ElicitResult::new(ElicitationAction::Decline));
                }
                "c" | "cancel" | ":cancel" => {
                    return Ok(ElicitResult::new(ElicitationAction::Cancel));
                }
                _ => writeln!(out, "  {}", error(paint, "answer y, e, n or c"))?,
            }
        }
    }
}

enum Asked {
    /// The field's value, or `None` to leave it out.
    Value(Option<Value>),
    /// The form was declined or cancelled.
    Stop(ElicitationAction),
}

fn ask_field(
    field: &Field,
    current: Option<&Value>,
    input: &mut dyn LineInput,
    out: &mut dyn Write,
    paint: Paint,
) -> io::Result<Asked> {
    if let Some(description) = &field.description {
        writeln!(out, "{}", paint.dim(&indent(&sanitize(description))))?;
    }
    if let Kind::Choice { options } | Kind::Choices { options, .. } = &field.kind {
        for (i, option) in options.iter().enumerate() {
            writeln!(out, "  {}) {}", i + 1, one_line(option.shown()))?;
        }
    }
    let mut prompt = paint.bold(&field.label());
    if field.required {
        prompt.push('*');
    }
    let hint = field.hint();
    if !hint.is_empty() {
        prompt.push_str(&paint.dim(&format!(" ({hint})")));
    }
    match (&field.kind, current) {
        (Kind::Boolean, Some(Value::Bool(true))) => prompt.push_str(" [Y/n]"),
        (Kind::Boolean, Some(Value::Bool(false))) => prompt.push_str(" [y/N]"),
        (Kind::Boolean, _) => prompt.push_str(" [y/n]"),
        (_, Some(value)) => prompt.push_str(&format!(" [{}]", one_line(&field.show(value)))),
        (_, None) => {}
    }
    prompt.push_str(": ");
    loop {
        let Some(answer) = input.read_line(&prompt, out)? else {
            return Ok(Asked::Stop(ElicitationAction::Cancel));
        };
        let answer = answer.trim();
        let checked = match answer {
            ":decline" => return Ok(Asked::Stop(ElicitationAction::Decline)),
            ":cancel" => return Ok(Asked::Stop(ElicitationAction::Cancel)),
            ":skip" if field.required => Err("this field is required".to_owned()),
            ":skip" => Ok(None),
            "" => match current {
                Some(value) => Ok(Some(value.clone())),
                None if !field.required => Ok(None),
                None => match &field.kind {
                    // An empty choice is an answer when no minimum says otherwise.
                    Kind::Choices { min: None | Some(0), .. } => Ok(Some(Value::Array(vec![]))),
                    _ => Err("this field is required".to_owned()),
                },
            },
            text => field.parse(text).map(Some),
        };
        match checked {
            Ok(value) => return Ok(Asked::Value(value)),
            Err(reason) => writeln!(out, "  {}", error(paint, &reason))?,
        }
    }
}

fn error(paint: Paint, reason: &str) -> String {
    paint.fg(anstyle::AnsiColor::Red, &format!("✗ {reason}"))
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

/// One option of a choice: the value sent, and what is shown.
#[derive(Debug, Clone, PartialEq)]
struct Choice {
    value: String,
    title: Option<String>,
}

impl Choice {
    fn shown(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.value)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text { min: Option<u32>, max: Option<u32>, format: Option<StringFormat> },
    Number { min: Option<f64>, max: Option<f64> },
    Integer { min: Option<i64>, max: Option<i64> },
    Boolean,
    Choice { options: Vec<Choice> },
    Choices { options: Vec<Choice>, min: Option<u64>, max: Option<u64> },
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    title: Option<String>,
    description: Option<String>,
    required: bool,
    default: Option<Value>,
    kind: Kind,
}

/// The form's fields, in the order the server wrote them.
fn fields(schema: &mcp::ElicitationSchema) -> Vec<Field> {
    let mut names: Vec<&String> = match &schema.property_order {
        Some(order) => order.iter().filter(|n| schema.properties.contains_key(*n)).collect(),
        None => Vec::new(),
    };
    for name in schema.properties.keys() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let required = schema.required.as_deref().unwrap_or(&[]);
    names
        .into_iter()
        .map(|name| {
            let mut field = field(name, &schema.properties[name]);
            field.required = required.contains(name);
            field
        })
        .collect()
}

fn text(value: &Option<Cow<'static, str>>) -> Option<String> {
    value.as_ref().map(|v| v.to_string())
}

fn untitled(values: &[String]) -> Vec<Choice> {
    values.iter().map(|v| Choice { value: v.clone(), title: None }).collect()
}

fn titled(options: &[mcp::ConstTitle]) -> Vec<Choice> {
    options
        .iter()
        .map(|o| Choice { value: o.const_.clone(), title: Some(o.title.clone()) })
        .collect()
}

fn strings(values: &Option<Vec<String>>) -> Option<Value> {
    values.as_ref().map(|v| Value::Array(v.iter().cloned().map(Value::String).collect()))
}

fn field(name: &str, definition: &PrimitiveSchemaDefinition) -> Field {
    let mut field = Field {
        name: name.to_owned(),
        title: None,
        description: None,
        required: false,
        default: None,
        kind: Kind::Text { min: None, max: None, format: None },
    };
    match definition {
        PrimitiveSchemaDefinition::String(s) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = s.default.clone().map(Value::String);
            field.kind = Kind::Text { min: s.min_length, max: s.max_length, format: s.format };
        }
        PrimitiveSchemaDefinition::Number(s) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = s.default.and_then(number);
            field.kind = Kind::Number { min: s.minimum, max: s.maximum };
        }
        PrimitiveSchemaDefinition::Integer(s) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = s.default.map(Value::from);
            field.kind = Kind::Integer { min: s.minimum, max: s.maximum };
        }
        PrimitiveSchemaDefinition::Boolean(s) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = s.default.map(Value::Bool);
            field.kind = Kind::Boolean;
        }
        PrimitiveSchemaDefinition::Enum(EnumSchema::Single(SingleSelectEnumSchema::Untitled(
            s,
        ))) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = s.default.clone().map(Value::String);
            field.kind = Kind::Choice { options: untitled(&s.enum_) };
        }
        PrimitiveSchemaDefinition::Enum(EnumSchema::Single(SingleSelectEnumSchema::Titled(s))) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = s.default.clone().map(Value::String);
            field.kind = Kind::Choice { options: titled(&s.one_of) };
        }
        PrimitiveSchemaDefinition::Enum(EnumSchema::Legacy(s)) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = s.default.clone().map(Value::String);
            let names = s.enum_names.as_deref().unwrap_or(&[]);
            let options = s
                .enum_
                .iter()
                .enumerate()
                .map(|(i, v)| Choice { value: v.clone(), title: names.get(i).cloned() })
                .collect();
            field.kind = Kind::Choice { options };
        }
        PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Untitled(s))) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = strings(&s.default);
            field.kind = Kind::Choices {
                options: untitled(&s.items.enum_),
                min: s.min_items,
                max: s.max_items,
            };
        }
        PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Titled(s))) => {
            field.title = text(&s.title);
            field.description = text(&s.description);
            field.default = strings(&s.default);
            field.kind = Kind::Choices {
                options: titled(&s.items.any_of),
                min: s.min_items,
                max: s.max_items,
            };
        }
        // A kind rmcp may learn later: asked as text, with what can be read of it.
        other => {
            let value = serde_json::to_value(other).unwrap_or(Value::Null);
            let read = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
            field.title = read("title");
            field.description = read("description");
        }
    }
    field
}

fn number(n: f64) -> Option<Value> {
    // Whole numbers are sent as integers (`3`, not `3.0`): both are JSON numbers.
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Some(Value::from(n as i64))
    } else {
        serde_json::Number::from_f64(n).map(Value::Number)
    }
}

impl Field {
    fn label(&self) -> String {
        one_line(self.title.as_deref().unwrap_or(&self.name))
    }

    /// What the answer must be, in a few words.
    fn hint(&self) -> String {
        match &self.kind {
            Kind::Text { min, max, format } => {
                let mut parts = Vec::new();
                match format {
                    Some(StringFormat::Email) => parts.push("email".to_owned()),
                    Some(StringFormat::Uri) => parts.push("URI".to_owned()),
                    Some(StringFormat::Date) => parts.push("date, YYYY-MM-DD".to_owned()),
                    Some(StringFormat::DateTime) => {
                        parts.push("date-time, YYYY-MM-DDThh:mm:ssZ".to_owned())
                    }
                    _ => {}
                }
                match (min, max) {
                    (Some(a), Some(b)) => parts.push(format!("{a}-{b} characters")),
                    (Some(a), None) => parts.push(format!("at least {a} characters")),
                    (None, Some(b)) => parts.push(format!("at most {b} characters")),
                    (None, None) => {}
                }
                parts.join(", ")
            }
            Kind::Number { min, max } => range("a number", *min, *max),
            Kind::Integer { min, max } => range("a whole number", *min, *max),
            Kind::Boolean => String::new(),
            Kind::Choice { .. } => "a number or a value".to_owned(),
            Kind::Choices { min, max, .. } => {
                let mut hint = "numbers or values, separated by commas".to_owned();
                match (min, max) {
                    (Some(a), Some(b)) => hint.push_str(&format!("; {a} to {b}")),
                    (Some(a), None) => hint.push_str(&format!("; at least {a}")),
                    (None, Some(b)) => hint.push_str(&format!("; at most {b}")),
                    (None, None) => {}
                }
                hint
            }
        }
    }

    /// A value as the person would type it.
    fn show(&self, value: &Value) -> String {
        let title = |v: &str| match &self.kind {
            Kind::Choice { options } | Kind::Choices { options, .. } => {
                options.iter().find(|o| o.value == v).map_or(v, Choice::shown).to_owned()
            }
            _ => v.to_owned(),
        };
        match value {
            Value::String(s) => title(s),
            Value::Bool(true) => "yes".to_owned(),
            Value::Bool(false) => "no".to_owned(),
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), &title))
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        }
    }

    /// The answer `text` (not empty) as the field's value, or why it does not fit.
    fn parse(&self, text: &str) -> Result<Value, String> {
        match &self.kind {
            Kind::Text { min, max, format } => {
                let length = text.chars().count();
                if let Some(min) = min
                    && length < *min as usize
                {
                    return Err(format!("at least {min} characters, please (this has {length})"));
                }
                if let Some(max) = max
                    && length > *max as usize
                {
                    return Err(format!("at most {max} characters, please (this has {length})"));
                }
                match format {
                    Some(StringFormat::Email) => check_email(text)?,
                    Some(StringFormat::Uri) => {
                        url::Url::parse(text).map_err(|e| format!("not a URI ({e})"))?;
                    }
                    Some(StringFormat::Date) => check_date(text)?,
                    Some(StringFormat::DateTime) => check_date_time(text)?,
                    _ => {}
                }
                Ok(Value::String(text.to_owned()))
            }
            Kind::Number { min, max } => {
                let n: f64 = text.parse().map_err(|_| format!("{text:?} is not a number"))?;
                if !n.is_finite() {
                    return Err(format!("{text:?} is not a number"));
                }
                within(n, *min, *max)?;
                number(n).ok_or_else(|| format!("{text:?} is not a number"))
            }
            Kind::Integer { min, max } => {
                let n: i64 = text.parse().map_err(|_| format!("{text:?} is not a whole number"))?;
                within(n, *min, *max)?;
                Ok(Value::from(n))
            }
            Kind::Boolean => match text.to_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Ok(Value::Bool(true)),
                "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
                _ => Err("answer y or n".to_owned()),
            },
            Kind::Choice { options } => Ok(Value::String(pick(options, text)?)),
            Kind::Choices { options, min, max } => {
                let mut picked: Vec<String> = Vec::new();
                for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let value = pick(options, part)?;
                    if !picked.contains(&value) {
                        picked.push(value);
                    }
                }
                let n = picked.len() as u64;
                if let Some(min) = min
                    && n < *min
                {
                    return Err(format!("choose at least {min}"));
                }
                if let Some(max) = max
                    && n > *max
                {
                    return Err(format!("choose at most {max}"));
                }
                Ok(Value::Array(picked.into_iter().map(Value::String).collect()))
            }
        }
    }
}

fn range<T: std::fmt::Display>(what: &str, min: Option<T>, max: Option<T>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("{what} from {a} to {b}"),
        (Some(a), None) => format!("{what}, at least {a}"),
        (None, Some(b)) => format!("{what}, at most {b}"),
        (None, None) => what.to_owned(),
    }
}

fn within<T: PartialOrd + std::fmt::Display>(
    n: T,
    min: Option<T>,
    max: Option<T>,
) -> Result<(), String> {
    if let Some(min) = min
        && n < min
    {
        return Err(format!("at least {min}, please"));
    }
    if let Some(max) = max
        && n > max
    {
        return Err(format!("at most {max}, please"));
    }
    Ok(())
}

/// The option `text` names: its number, its value, or its title (any case).
fn pick(options: &[Choice], text: &str) -> Result<String, String> {
    if let Ok(n) = text.parse::<usize>()
        && (1..=options.len()).contains(&n)
        && !options.iter().any(|o| o.value == text)
    {
        return Ok(options[n - 1].value.clone());
    }
    let found = options
        .iter()
        .find(|o| o.value == text)
        .or_else(|| options.iter().find(|o| o.shown().eq_ignore_ascii_case(text)))
        .or_else(|| options.iter().find(|o| o.value.eq_ignore_ascii_case(text)));
    match found {
        Some(option) => Ok(option.value.clone()),
        None => Err(format!("{:?} is not one of the options (1 to {})", text, options.len())),
    }
}

fn check_email(text: &str) -> Result<(), String> {
    let bad = || format!("{text:?} is not an email address");
    let (local, domain) = text.rsplit_once('@').ok_or_else(bad)?;
    let labels_ok = !domain.is_empty() && domain.split('.').all(|l| !l.is_empty());
    if local.is_empty() || !labels_ok || text.chars().any(char::is_whitespace) {
        return Err(bad());
    }
    Ok(())
}

/// `YYYY-MM-DD`, a real day.
fn check_date(text: &str) -> Result<(), String> {
    parse_date(text).ok_or_else(|| format!("{text:?} is not a date (YYYY-MM-DD)"))
}

fn parse_date(text: &str) -> Option<()> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year: u32 = digits(&text[0..4])?;
    let month: u32 = digits(&text[5..7])?;
    let day: u32 = digits(&text[8..10])?;
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (1..=days).contains(&day).then_some(())
}

/// RFC 3339: `YYYY-MM-DDThh:mm:ss[.frac](Z|±hh:mm)`.
fn check_date_time(text: &str) -> Result<(), String> {
    let bad = || format!("{text:?} is not a date-time (like 2025-11-25T14:30:00Z)");
    let (date, time) = text.split_once(['T', 't']).ok_or_else(bad)?;
    parse_date(date).ok_or_else(bad)?;
    let (clock, offset) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        (clock, None)
    } else {
        let at = time.rfind(['+', '-']).ok_or_else(bad)?;
        (&time[..at], Some(&time[at + 1..]))
    };
    let (whole, fraction) = match clock.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (clock, None),
    };
    let ok = hh_mm(whole.get(..5).unwrap_or(""), 23)
        && whole.len() == 8
        && whole.as_bytes()[5] == b':'
        && digits(&whole[6..8]).is_some_and(|s: u32| s <= 60)
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
        && offset.is_none_or(|o| hh_mm(o, 23));
    if ok { Ok(()) } else { Err(bad()) }
}

fn hh_mm(text: &str, max_hour: u32) -> bool {
    text.len() == 5
        && text.as_bytes()[2] == b':'
        && digits(&text[0..2]).is_some_and(|h: u32| h <= max_hour)
        && digits(&text[3..5]).is_some_and(|m: u32| m <= 59)
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests;
