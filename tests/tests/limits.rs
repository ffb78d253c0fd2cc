//! Connection limits of the local server: a client that never finishes its request headers or
//! its body is disconnected, and connections beyond the cap wait until one closes.

use std::time::Duration;

use a2a_e2e::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous: these tests wait for the server, never for a fixed time.
const PATIENCE: Duration = Duration::from_secs(30);

async fn connect(server: &Server) -> TcpStream {
    let addr = server
        .base()
        .strip_prefix("http://")
        .expect("the base is http://");
    TcpStream::connect(addr)
        .await
        .expect("connect to the server")
}

/// Reads until the server closes the connection; a reset counts as closed.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received)).await;
    match read.expect("the server closes the connection") {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(err) => panic!("reading from the server failed: {err}"),
    }
    received
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_request_is_disconnected_after_the_header_timeout() {
    let server = Server::start_with_env(&[("A2A_HEADER_TIMEOUT_SECS", "1")]).await;
    let mut stream = connect(&server).await;
    stream
        .write_all(b"GET /.well-known/agent-card.json HT")
        .await
        .unwrap();
    let received = read_until_closed(&mut stream).await;
    // Whatever the server says on its way out, it is not the card.
    assert!(
        !String::from_utf8_lossy(&received).contains("200 OK"),
        "a half-sent request was served: {}",
        String::from_utf8_lossy(&received)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_beyond_the_cap_waits_until_one_closes() {
    let server = Server::start_with_env(&[
        ("A2A_MAX_CONNECTIONS", "2"),
        // The held connections send nothing: keep them open for the whole test.
        ("A2A_HEADER_TIMEOUT_SECS", "300"),
    ])
    .await;
    let first = connect(&server).await;
    let _second = connect(&server).await;

    let mut third = connect(&server).await;
    third
        .write_all(
            b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: localhost\r\n\
              Connection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut response = tokio::spawn(async move { read_until_closed(&mut third).await });
    // A negative: nothing must arrive while the two connections are held. One second is
    // ample for a card on loopback.
    assert!(
        tokio::time::timeout(Duration::from_secs(1), &mut response)
            .await
            .is_err(),
        "a connection beyond the cap was served"
    );

    drop(first);
    let received = tokio::time::timeout(PATIENCE, response)
        .await
        .expect("served once a slot is free")
        .unwrap();
    let text = String::from_utf8_lossy(&received);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "unexpected response: {text}"
    );
}

/// A client that sends a request's headers and then only part of its body is answered (the
/// body could not be read: `-32600`) and disconnected once the body timeout
/// (`A2A_BODY_TIMEOUT_SECS`, here 1 s) passes, and the request does nothing: without the
/// timeout the server would wait for the rest as long as the connection stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_body_is_disconnected_after_the_body_timeout() {
    let server = Server::start_with_env(&[("A2A_BODY_TIMEOUT_SECS", "1")]).await;
    let mut stream = connect(&server).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"#;
    let head = format!(
        "POST /jsonrpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         A2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n",
        body.len() + 1000
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    // The rest of the body never comes; the connection stays open until the server ends it.
    let received = read_until_closed(&mut stream).await;
    let text = String::from_utf8_lossy(&received);
    // JSON-RPC answers its errors with HTTP 200; what counts is that the body was not read.
    assert!(
        text.contains(r#""code":-32600"#) && text.contains("The request body could not be read"),
        "not the body's timeout: {text}"
    );
    let listed = server
        .list_tasks(Binding::Rest, serde_json::json!({}))
        .await
        .expect("ListTasks");
    assert_eq!(
        listed["tasks"],
        serde_json::json!([]),
        "nothing was created"
    );
}
