//! Lines cut, decoded and drained whatever the child writes.

use tokio::io::AsyncWriteExt as _;

use super::{LineCutter, MAX_LINE, StderrLog, drain};

fn lines_of(chunks: &[&[u8]]) -> Vec<String> {
    let mut cutter = LineCutter::default();
    let mut lines = Vec::new();
    for chunk in chunks {
        cutter.feed(chunk, |line| lines.push(line));
    }
    lines.extend(cutter.finish());
    lines
}

#[test]
fn lines_are_split_across_chunks_and_lose_their_line_ends() {
    let lines = lines_of(&[b"one\r\ntw", b"o\n\nthr", b"ee"]);
    assert_eq!(lines, ["one", "two", "", "three"]);
}

#[test]
fn a_long_line_is_cut_and_marked_and_the_next_line_is_whole() {
    let long = vec![b'a'; MAX_LINE + 100];
    let lines = lines_of(&[&long[..5000], &long[5000..], b"\nnext\n"]);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], format!("{} [cut: 100 more bytes]", "a".repeat(MAX_LINE)));
    assert_eq!(lines[1], "next");
}

#[test]
fn a_line_with_no_end_is_cut_too() {
    let long = vec![b'b'; 3 * MAX_LINE];
    let lines = lines_of(&[&long]);
    assert_eq!(lines, [format!("{} [cut: {} more bytes]", "b".repeat(MAX_LINE), 2 * MAX_LINE)]);
}

#[test]
fn invalid_utf8_is_replaced_and_a_character_split_by_the_cut_is_left_out_whole() {
    assert_eq!(lines_of(&[b"bad \xff\xfe here\n"]), ["bad \u{fffd}\u{fffd} here"]);
    // `é` is two bytes; the cut falls between them.
    let mut line = vec![b'x'; MAX_LINE - 1];
    line.extend_from_slice("é and more".as_bytes());
    let lines = lines_of(&[&line, b"\n"]);
    let more = "é and more".len() as u64;
    assert_eq!(lines, [format!("{} [cut: {more} more bytes]", "x".repeat(MAX_LINE - 1))]);
}

#[tokio::test]
async fn draining_goes_on_past_invalid_utf8_and_keeps_the_last_lines() {
    let (mut child, ours) = tokio::io::duplex(1024);
    let log = StderrLog::default();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let reader = tokio::spawn(drain(ours, log.clone(), move |line| {
        record.lock().expect("lock").push(line);
    }));
    child.write_all(b"\xff\xfe not UTF-8\n").await.expect("write");
    // Far more than the pipe holds: the write only finishes when the reader keeps reading.
    for i in 0..2000 {
        child.write_all(format!("line {i}\n").as_bytes()).await.expect("write");
    }
    child.write_all(b"last words").await.expect("write");
    drop(child);
    reader.await.expect("drain ends");
    log.closed().await;
    let seen = seen.lock().expect("lock");
    assert_eq!(seen.len(), 2002);
    assert_eq!(seen[0], "\u{fffd}\u{fffd} not UTF-8");
    let tail = log.tail().0;
    assert_eq!(tail.len(), 12);
    assert_eq!(tail.last().map(String::as_str), Some("last words"));
}
