//! Server-sent events read from a byte stream, as the three APIs write them.
//!
//! Written here rather than taken from `sse-stream` (used by the upstream crate) or
//! `eventsource-stream`: `sse-stream` 0.2 fails the whole stream on a field it does not know, on
//! a line without a colon and on a repeated `event:` line, all of which the HTML standard says
//! to ignore (or to let the last one win), and drops an event the server did not end with a
//! blank line before closing; `eventsource-stream` 0.2.3 pulls in `nom` 7 and is no longer
//! maintained. What this reader does, following the standard's parsing rules:
//!
//! - lines end with LF, CRLF or CR, and may be split anywhere across chunks (a CRLF split between
//!   two chunks counts once; a UTF-8 character split between two chunks comes out whole);
//! - `data:` with or without the space after the colon; several `data:` lines are joined with
//!   LF; `event:` names the event (the last one wins); `id:`, `retry:`, unknown fields and
//!   comment lines (`: ...`) are ignored; a byte-order mark at the start is skipped;
//! - an event is dispatched at a blank line, and only when it had at least one `data:` line;
//! - at the end of the stream, an event still open is dispatched too (some servers close the
//!   connection right after their last `data:` line).

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event:` field, when there was one.
    pub(super) event: Option<String>,
    /// The `data:` lines, joined with LF.
    pub(super) data: String,
}

/// A line that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NotUtf8;

/// The reader's state between chunks.
#[derive(Debug, Default)]
pub(super) struct SseReader {
    /// The bytes of the line not yet ended.
    line: Vec<u8>,
    /// The previous chunk ended with CR: an LF starting the next one belongs to it.
    after_cr: bool,
    /// Past the first line (where a byte-order mark may be).
    started: bool,
    event: Option<String>,
    data: Option<String>,
}

impl SseReader {
    /// Reads `chunk`, appending the events it completes to `out`.
    pub(super) fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), NotUtf8> {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            self.line(&line, out)?;
            let ending = rest[end];
            rest = &rest[end + 1..];
            if ending == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.line.extend_from_slice(rest);
        Ok(())
    }

    /// The stream ended: the line not yet ended and the event still open are dispatched.
    pub(super) fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), NotUtf8> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line(&line, out)?;
        }
        self.line(b"", out)
    }

    fn line(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), NotUtf8> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(SseEvent { event: self.event.take(), data });
            }
            self.event = None;
            return Ok(());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return Ok(()),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                let value = std::str::from_utf8(value).map_err(|_| NotUtf8)?;
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
            b"event" => {
                self.event = Some(std::str::from_utf8(value).map_err(|_| NotUtf8)?.to_owned());
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    fn read_in_pieces(text: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut reader = SseReader::default();
        let mut out = Vec::new();
        for chunk in text.chunks(piece) {
            reader.feed(chunk, &mut out).expect("utf-8");
        }
        reader.finish(&mut out).expect("utf-8");
        out
    }

    fn event(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
    }

    /// Every way of cutting the text gives the same events.
    fn read(text: &str) -> Vec<SseEvent> {
        let whole = read_in_pieces(text.as_bytes(), text.len().max(1));
        for piece in 1..text.len().max(1) {
            assert_eq!(read_in_pieces(text.as_bytes(), piece), whole, "pieces of {piece}");
        }
        whole
    }

    #[test]
    fn data_with_and_without_the_space_and_multi_line_data() {
        assert_eq!(
            read("data: {\"a\":1}\n\ndata:{\"b\":2}\n\ndata: one\ndata:two\ndata\n\n"),
            vec![event(None, "{\"a\":1}"), event(None, "{\"b\":2}"), event(None, "one\ntwo\n")]
        );
    }

    #[test]
    fn event_names_comments_ids_and_unknown_fields() {
        let text = ": keep-alive\n\nevent: ping\nid: 7\nretry: 100\nfoo: bar\nevent: message_start\n\
                    data: {}\n\n: OPENROUTER PROCESSING\n\nevent: lonely\n\n";
        assert_eq!(read(text), vec![event(Some("message_start"), "{}")]);
    }

    #[test]
    fn crlf_and_cr_line_endings_split_anywhere() {
        assert_eq!(
            read("event: a\r\ndata: 1\r\n\r\ndata: 2\r\rdata: 3\n\n"),
            vec![event(Some("a"), "1"), event(None, "2"), event(None, "3")]
        );
    }

    #[test]
    fn characters_split_across_chunks_come_out_whole_and_a_bom_is_skipped() {
        assert_eq!(read("\u{feff}data: «é» 日本 🦀\n\n"), vec![event(None, "«é» 日本 🦀")]);
    }

    #[test]
    fn an_event_open_at_the_end_is_dispatched() {
        assert_eq!(read("data: 1\n\ndata: [DONE]"), vec![event(None, "1"), event(None, "[DONE]")]);
        assert_eq!(read("data: [DONE]\n"), vec![event(None, "[DONE]")]);
        assert_eq!(read(""), vec![]);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error() {
        let mut reader = SseReader::default();
        assert_eq!(reader.feed(b"data: \xff\n\n", &mut Vec::new()), Err(NotUtf8));
    }
}
