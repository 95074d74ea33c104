//! Property tests of the SSE writer: every message written as an event (with its id, between
//! priming events and keep-alive comments) reads back, with the reader rmcp's clients use,
//! as the same JSON under the same id, however the bytes arrive, whatever line breaks or
//! Unicode the JSON held; and event ids read back as the stream and index they were made of.

use futures::StreamExt as _;
use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::jsonrpc::props::json;

/// What goes on a stream: events of messages, priming events and comments.
#[derive(Debug, Clone)]
enum Written {
    Message { id: Option<String>, json: Value, pretty: bool, crlf: bool },
    Priming(String),
    KeepAlive,
}

impl Written {
    fn bytes(&self) -> Bytes {
        match self {
            Written::Message { id, json, pretty, crlf } => {
                let mut text = if *pretty {
                    serde_json::to_string_pretty(json).expect("JSON")
                } else {
                    json.to_string()
                };
                if *crlf {
                    text = text.replace('\n', "\r\n");
                }
                event(id.as_deref(), text.as_bytes())
            }
            Written::Priming(id) => priming(id),
            Written::KeepAlive => keep_alive(),
        }
    }
}

fn event_id() -> impl Strategy<Value = String> {
    (any::<u64>(), any::<u64>()).prop_map(|(stream, index)| format!("{stream}/{index}"))
}

fn written() -> impl Strategy<Value = Written> {
    prop_oneof![
        6 => (prop::option::of(event_id()), json(), any::<bool>(), any::<bool>())
            .prop_map(|(id, json, pretty, crlf)| Written::Message { id, json, pretty, crlf }),
        1 => event_id().prop_map(Written::Priming),
        1 => Just(Written::KeepAlive),
    ]
}

/// `bytes` cut at `cuts` and read with `sse-stream`.
fn read(bytes: &[u8], cuts: &[usize]) -> Vec<Result<sse_stream::Sse, String>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().chain([bytes.len()]) {
        pieces.push(Ok::<_, std::io::Error>(Bytes::copy_from_slice(&bytes[start..end])));
        start = end;
    }
    let stream = sse_stream::SseStream::from_bytes_stream(futures::stream::iter(pieces));
    futures::executor::block_on(stream.map(|item| item.map_err(|e| e.to_string())).collect())
}

proptest! {
    #[test]
    fn written_messages_read_back_as_the_same_json(
        stream in prop::collection::vec(written(), 0..6),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let bytes: Vec<u8> = stream.iter().flat_map(|w| w.bytes().to_vec()).collect();
        let read = read(&bytes, &cuts);
        // Comments are no events; every other item is one.
        let expected: Vec<&Written> =
            stream.iter().filter(|w| !matches!(w, Written::KeepAlive)).collect();
        prop_assert_eq!(read.len(), expected.len(), "{:?}", read);
        for (read, written) in read.into_iter().zip(expected) {
            let read = read.map_err(TestCaseError::fail)?;
            match written {
                Written::Message { id, json, .. } => {
                    prop_assert_eq!(&read.id, id);
                    let data = read.data.unwrap_or_default();
                    let value: Value = serde_json::from_str(&data)
                        .map_err(|e| TestCaseError::fail(format!("{e}: {data:?}")))?;
                    prop_assert_eq!(&value, json);
                }
                Written::Priming(id) => {
                    prop_assert_eq!(read.id.as_ref(), Some(id));
                    prop_assert_eq!(read.retry, Some(RETRY.as_millis() as u64));
                    prop_assert_eq!(read.data.as_deref(), Some(""));
                }
                Written::KeepAlive => unreachable!("filtered out"),
            }
        }
    }

    #[test]
    fn a_message_stays_on_one_data_line_of_its_length(
        data in prop::collection::vec(any::<u8>(), 0..64),
        id in prop::option::of(event_id()),
    ) {
        let written = event(id.as_deref(), &data);
        let head = id.map_or(0, |id| "id: ".len() + id.len() + 1);
        prop_assert_eq!(written.len(), head + "data: ".len() + data.len() + 2);
        prop_assert!(written.ends_with(b"\n\n"));
        let body = &written[head + "data: ".len()..written.len() - 2];
        prop_assert!(!body.contains(&b'\n') && !body.contains(&b'\r'));
    }

    #[test]
    fn event_ids_read_back(stream in any::<u64>(), index in any::<u64>(), space in "[ \t]{0,2}") {
        prop_assert_eq!(
            parse_event_id(&format!("{space}{stream}/{index}{space}")),
            Some((stream, index))
        );
    }

    #[test]
    fn any_last_event_id_is_read_or_refused(id in "\\PC{0,24}|[0-9/ +-]{0,24}") {
        if let Some((stream, index)) = parse_event_id(&id) {
            prop_assert_eq!(parse_event_id(&format!("{stream}/{index}")), Some((stream, index)));
        }
    }
}
