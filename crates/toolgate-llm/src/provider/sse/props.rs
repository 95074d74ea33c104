//! Property tests of the SSE reader: any bytes in any pieces never panic and give the same
//! events however they are cut, and events written as the HTML standard writes them (data
//! with line breaks of every kind, colons, Unicode; comments, ids, retries and unknown fields
//! between them; any line ending) read back as they were written.

use proptest::prelude::*;

use super::{NotUtf8, SseEvent, SseReader};

/// What a reader makes of `bytes` cut at `cuts` (positions, in any order): the events, and
/// whether it stopped on a line that is not UTF-8.
fn read(bytes: &[u8], cuts: &[usize]) -> (Vec<SseEvent>, Result<(), NotUtf8>) {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut reader = SseReader::default();
    let mut out = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().chain([bytes.len()]) {
        if let Err(error) = reader.feed(&bytes[start..end], &mut out) {
            return (out, Err(error));
        }
        start = end;
    }
    let done = reader.finish(&mut out);
    (out, done)
}

/// One event as a server writes it: its name and data, and what goes between events.
#[derive(Debug, Clone)]
struct Written {
    event: Option<String>,
    data: String,
    /// Lines the reader must skip, written before the event.
    noise: Vec<&'static str>,
    /// Whether `data:` is followed by a space when the line allows it either way.
    space: bool,
}

/// A string without line breaks (an event name).
fn name() -> impl Strategy<Value = String> {
    "[^\r\n]{0,12}"
}

/// Data: any text, line breaks of every kind and colons included.
fn data() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => "\\PC{0,8}",
            1 => prop::sample::select(&["\n", "\r\n", "\r", ":", ": ", " ", "data: x", "\u{feff}"][..])
                .prop_map(str::to_owned),
        ],
        0..8,
    )
    .prop_map(|pieces| pieces.concat())
}

fn written() -> impl Strategy<Value = Written> {
    let noise = prop::collection::vec(
        prop::sample::select(
            &[": keep-alive", ":", "id: 7", "retry: 3000", "foo: bar", "idle"][..],
        ),
        0..3,
    );
    (prop::option::of(name()), data(), noise, any::<bool>())
        .prop_map(|(event, data, noise, space)| Written { event, data, noise, space })
}

/// `events` as a server writes them, each line ended by `ending`, after a byte-order mark when
/// `bom`.
fn write(events: &[Written], ending: &str, bom: bool) -> Vec<u8> {
    let mut out = String::new();
    if bom {
        out.push('\u{feff}');
    }
    for event in events {
        for line in &event.noise {
            out.push_str(line);
            out.push_str(ending);
        }
        if let Some(name) = &event.event {
            out.push_str("event: ");
            out.push_str(name);
            out.push_str(ending);
        }
        for line in normalized(&event.data).split('\n') {
            // A value that starts with a space needs the one space the reader takes off.
            let space = if event.space || line.starts_with(' ') { " " } else { "" };
            out.push_str("data:");
            out.push_str(space);
            out.push_str(line);
            out.push_str(ending);
        }
        out.push_str(ending);
    }
    out.into_bytes()
}

/// `data` as it reads back: every line break a line feed.
fn normalized(data: &str) -> String {
    data.replace("\r\n", "\n").replace('\r', "\n")
}

proptest! {
    #[test]
    fn any_bytes_in_any_pieces_read_the_same(
        bytes in prop::collection::vec(
            prop_oneof![
                3 => any::<u8>(),
                2 => prop::sample::select(&b"\r\n:datevnt "[..]),
            ],
            0..200,
        ),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = read(&bytes, &[]);
        prop_assert_eq!(read(&bytes, &cuts), whole);
    }

    #[test]
    fn written_events_read_back(
        events in prop::collection::vec(written(), 0..5),
        ending in prop::sample::select(&["\n", "\r\n", "\r"][..]),
        bom in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let bytes = write(&events, ending, bom);
        let (read, done) = read(&bytes, &cuts);
        prop_assert_eq!(done, Ok(()));
        let expected: Vec<SseEvent> = events
            .iter()
            .map(|e| SseEvent { event: e.event.clone(), data: normalized(&e.data) })
            .collect();
        prop_assert_eq!(read, expected);
    }
}
