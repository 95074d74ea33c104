//! Tests of the line transport: the size limit, answers to bad lines, and flushing on close.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;

async fn lines_of(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
    let mut read = BufReader::with_capacity(4, input);
    let mut line = Vec::new();
    let mut seen = Vec::new();
    loop {
        let found = read_line(&mut read, &mut line, max).await.expect("read");
        if found == Line::End {
            return seen;
        }
        seen.push((found, line.clone()));
    }
}

#[tokio::test]
async fn lines_up_to_the_limit_are_read_and_longer_ones_skipped_whole() {
    let seen = lines_of(b"12345\n123456789\nab\nlast", 5).await;
    assert_eq!(
        seen,
        [
            (Line::Whole, b"12345".to_vec()),
            (Line::TooLong, Vec::new()),
            (Line::Whole, b"ab".to_vec()),
            (Line::Whole, b"last".to_vec()),
        ]
    );
}

#[tokio::test]
async fn bad_lines_are_answered_and_good_ones_delivered_in_order() {
    let (mut client, server_in) = tokio::io::duplex(1024);
    let (server_out, client_out) = tokio::io::duplex(1024);
    let mut transport = Lines::new(server_in, server_out, 64, MOST_BACKLOG);
    client
        .write_all(
            concat!(
                "{not json\n",
                "\n",
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
                "\n",
                "[1]\n",
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"0123456789012345678901234567890123456789"}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
                "\n",
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    drop(client);
    let first = transport.receive().await.expect("ping 1");
    assert!(serde_json::to_string(&first).expect("json").contains(r#""id":1"#));
    let second = transport.receive().await.expect("ping 3");
    assert!(serde_json::to_string(&second).expect("json").contains(r#""id":3"#));
    assert!(transport.receive().await.is_none(), "input ended");
    transport.close().await.expect("close");

    let mut answers = BufReader::new(client_out).lines();
    let mut codes = Vec::new();
    while let Some(line) = answers.next_line().await.expect("read") {
        let answer: serde_json::Value = serde_json::from_str(&line).expect("an answer is JSON");
        assert_eq!(answer["id"], serde_json::Value::Null, "{line}");
        codes.push(answer["error"]["code"].as_i64().expect("an error code"));
    }
    assert_eq!(codes, [-32700, -32600, -32600]);
}

#[tokio::test]
async fn everything_sent_is_written_before_close_returns() {
    let (_client, server_in) = tokio::io::duplex(64);
    let (server_out, client_out) = tokio::io::duplex(1 << 20);
    let mut transport = Lines::new(server_in, server_out, 1024, MOST_BACKLOG);
    for id in 0..100 {
        let message = mcp::ServerJsonRpcMessage::response(
            mcp::ServerResult::empty(()),
            mcp::RequestId::Number(id),
        );
        transport.send(message).await.expect("send");
    }
    transport.close().await.expect("close");
    drop(transport);
    let mut answers = BufReader::new(client_out).lines();
    let mut count = 0;
    while let Some(line) = answers.next_line().await.expect("read") {
        assert!(line.contains(&format!(r#""id":{count}"#)), "{line}");
        count += 1;
    }
    assert_eq!(count, 100);
}

/// A client that writes and never reads: once the answers waiting for it pass the backlog's
/// limit, nothing more of its input is read, so its own writes block instead of toolgate's
/// memory growing. When it reads again, everything is answered.
#[tokio::test(start_paused = true)]
async fn a_client_that_does_not_read_is_not_read_either() {
    const LIMIT: usize = 4096;
    const LINES: usize = 10_000;
    let (mut client, server_in) = tokio::io::duplex(256);
    let (server_out, client_out) = tokio::io::duplex(256);
    let mut transport = Lines::new(server_in, server_out, 64, LIMIT);
    let writing = tokio::spawn(async move {
        let mut written = 0;
        for _ in 0..LINES {
            // Not JSON: each line gets an error answer of about 80 bytes.
            if client.write_all(b"x\n").await.is_err() {
                break;
            }
            written += 1;
        }
        (client, written)
    });
    // Nothing reads the output. The paused clock moves only once every task waits: this
    // returns when the reader, the writer and the client are all stuck.
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    assert!(!writing.is_finished(), "all {LINES} lines were read while nothing was written");
    assert!(
        transport.output().backlog.bytes.load(Ordering::Acquire) < LIMIT + 200,
        "the backlog grew past its limit"
    );

    // Reading again lets the rest through, every line answered.
    let mut out = BufReader::new(client_out).lines();
    let mut seen = 0;
    while seen < LINES {
        let line = out.next_line().await.expect("read").expect("a line");
        assert!(line.contains("-32700"), "{line}");
        seen += 1;
    }
    let (client, written) = writing.await.expect("the writer");
    assert_eq!(written, LINES);
    drop(client);
    assert!(transport.receive().await.is_none());
}
