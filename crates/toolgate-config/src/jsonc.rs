//! JSON with comments, as VS Code writes its `mcp.json`: `//` and `/* */` comments and trailing
//! commas are blanked out so that a strict JSON parser accepts the text.
//!
//! Every removed byte becomes a space (newlines are kept), so line and column numbers in parse
//! errors still point into the original text.

/// `text` with comments and trailing commas replaced by spaces.
pub(crate) fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut pending_comma = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                pending_comma = None;
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(bytes.len());
                out.extend_from_slice(&bytes[start..i]);
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(bytes.len(), |at| i + 2 + at + 2);
                out.extend(bytes[i..end].iter().map(|&b| if b == b'\n' { b'\n' } else { b' ' }));
                i = end;
            }
            b',' => {
                pending_comma = Some(out.len());
                out.push(b',');
                i += 1;
            }
            b'}' | b']' => {
                if let Some(at) = pending_comma.take() {
                    out[at] = b' ';
                }
                out.push(bytes[i]);
                i += 1;
            }
            b => {
                if !b.is_ascii_whitespace() {
                    pending_comma = None;
                }
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("stripping must only replace ASCII bytes with spaces")
}

#[cfg(test)]
pub(crate) mod props;
#[cfg(test)]
mod tests;
