//! Property tests of the stdio transport: lines are framed the same however the input arrives
//! (any bytes, cut anywhere, any limit), and every line that is not blank gets exactly one
//! thing, in order: delivered as a message, or answered with a JSON-RPC error on one line of
//! its own. What the front writes stays one line whatever line breaks the JSON held.

use std::pin::Pin;
use std::task::{Context, Poll};

use proptest::prelude::*;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, ReadBuf};

use super::*;
use crate::jsonrpc::props::{bytes, check_error_answer, json};

/// A reader that hands out its bytes in the given pieces.
struct Pieces {
    pieces: std::collections::VecDeque<Vec<u8>>,
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(mut piece) = self.pieces.pop_front() {
            let n = piece.len().min(buf.remaining());
            buf.put_slice(&piece[..n]);
            if n < piece.len() {
                self.pieces.push_front(piece.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// `bytes` cut at `cuts` (positions, in any order).
fn cut(bytes: &[u8], cuts: &[usize]) -> Pieces {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut pieces = std::collections::VecDeque::new();
    let mut start = 0;
    for end in cuts.into_iter().chain([bytes.len()]) {
        // An empty piece would read as the end of the input.
        if end > start {
            pieces.push_back(bytes[start..end].to_vec());
        }
        start = end;
    }
    Pieces { pieces }
}

/// What the lines of `bytes` must read as: each line without its newline, or `TooLong`.
fn expected_lines(bytes: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|line| {
            if line.len() > max {
                (Line::TooLong, Vec::new())
            } else {
                (Line::Whole, line.to_vec())
            }
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// Lines of messages, bad input, blank lines and lines over the limit.
fn input() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let line = prop_oneof![
        8 => bytes().prop_map(|mut b| {
            b.retain(|&byte| byte != b'\n');
            b
        }),
        1 => "[ \t\r]{0,3}".prop_map(String::into_bytes),
        1 => Just(vec![b'x'; MAX + 1]),
    ];
    prop::collection::vec(line, 0..8)
}

/// The limit of a line in [`input`].
const MAX: usize = 512;

proptest! {
    #[test]
    fn lines_are_framed_the_same_however_they_arrive(
        bytes in prop::collection::vec(
            prop_oneof![3 => any::<u8>(), 1 => Just(b'\n')],
            0..100,
        ),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
        max in 0usize..20,
        capacity in 1usize..16,
    ) {
        let seen = runtime().block_on(async {
            let mut read = BufReader::with_capacity(capacity, cut(&bytes, &cuts));
            let mut line = Vec::new();
            let mut seen = Vec::new();
            loop {
                match read_line(&mut read, &mut line, max).await.expect("read") {
                    Line::End => return seen,
                    found => seen.push((found, line.clone())),
                }
            }
        });
        prop_assert_eq!(seen, expected_lines(&bytes, max));
    }

    #[test]
    fn every_line_gets_one_message_or_one_error(
        lines in input(),
        ending in prop::sample::select(&["\n", "\r\n"][..]),
        last_ended in any::<bool>(),
    ) {
        let mut bytes = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            bytes.extend_from_slice(line);
            if i + 1 < lines.len() || last_ended {
                bytes.extend_from_slice(ending.as_bytes());
            }
        }
        let (messages, answers) = runtime().block_on(async {
            let (server_out, client_out) = tokio::io::duplex(1 << 20);
            let mut transport =
                Lines::new(std::io::Cursor::new(bytes.clone()), server_out, MAX, MOST_BACKLOG);
            let mut messages = Vec::new();
            while let Some(message) = transport.receive().await {
                messages.push(serde_json::to_value(message).expect("serializes"));
            }
            transport.close().await.expect("close");
            drop(transport);
            let mut answers = Vec::new();
            let mut read = BufReader::new(client_out).lines();
            while let Some(line) = read.next_line().await.expect("read") {
                answers.push(line);
            }
            (messages, answers)
        });
        // What each line must become, in order.
        let mut expected_messages = Vec::new();
        let mut expected_answers = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let mut content = line.clone();
            if ending == "\r\n" && (i + 1 < lines.len() || last_ended) {
                content.push(b'\r');
            }
            if content.len() > MAX {
                expected_answers.push(Vec::new());
            } else if content.trim_ascii().is_empty() {
                continue;
            } else {
                match crate::jsonrpc::parse_message(&content) {
                    Ok(message) => {
                        expected_messages.push(serde_json::to_value(message).expect("serializes"));
                    }
                    Err(_) => expected_answers.push(content),
                }
            }
        }
        prop_assert_eq!(messages, expected_messages);
        prop_assert_eq!(answers.len(), expected_answers.len());
        for (answer, line) in answers.iter().zip(&expected_answers) {
            let answer: Value = serde_json::from_str(answer).expect("an answer is JSON");
            if line.is_empty() {
                prop_assert_eq!(&answer["error"]["code"], -32600);
                prop_assert_eq!(&answer["id"], &Value::Null);
            } else {
                check_error_answer(&answer, line)?;
            }
        }
    }

    #[test]
    fn what_is_sent_stays_one_line(value in json(), pretty in any::<bool>(), crlf in any::<bool>()) {
        let mut text = if pretty {
            serde_json::to_string_pretty(&value).expect("JSON")
        } else {
            value.to_string()
        };
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        prop_assert!(Output::for_test(sender).send_json(text.into_bytes()));
        let line = receiver.try_recv().expect("sent");
        prop_assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        let read: Value = serde_json::from_slice(&line).expect("still JSON");
        prop_assert_eq!(read, value);
    }
}
