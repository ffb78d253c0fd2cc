//! Property tests of the client's SSE framing (issue 46): whatever bytes a server sends, and
//! however the network cuts them into chunks, the reader neither panics nor reads past its
//! limits, and the events it reads do not depend on the chunking.

use a2a_client::sse::ByteStream;
use a2a_client::{Binding, Error, EventReader, SseEvent};
use axum::body::Bytes;
use proptest::prelude::*;
use reqwest::header::HeaderMap;

/// Bytes shaped like an event stream: fields, comments, blank lines, CRLF, and arbitrary bytes.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b"event: error".to_vec()),
        Just(b": keep-alive".to_vec()),
        Just(b"retry: 10".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\r".to_vec()),
        Just("{\"result\": \"é\"}".as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// `bytes` cut at `cuts` (positions taken modulo its length).
fn chunked(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    if bytes.is_empty() {
        return vec![];
    }
    let mut at: Vec<usize> = cuts.iter().map(|c| c % bytes.len()).collect();
    at.push(0);
    at.push(bytes.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
}

/// Every event the reader gives for `chunks`, and how it ended (`None`: the stream closed).
fn read(chunks: Vec<Vec<u8>>, limits: Option<(usize, u64)>) -> (Vec<SseEvent>, Option<String>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let items: Vec<reqwest::Result<Bytes>> =
            chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
        let stream: ByteStream = Box::pin(futures::stream::iter(items));
        let mut reader = EventReader::new(Binding::JsonRpc, 200, HeaderMap::new(), stream);
        if let Some((event, total)) = limits {
            reader = reader.limits(event, total);
        }
        let mut events = Vec::new();
        loop {
            match reader.next_event().await {
                Ok(Some(event)) => events.push(event),
                Ok(None) => return (events, None),
                Err(err) => {
                    let limit = matches!(err, Error::TooLarge { .. });
                    assert!(
                        limit,
                        "only a limit ends a stream that did not break: {err}"
                    );
                    return (events, Some(err.to_string()));
                }
            }
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The events do not depend on where the chunks were cut.
    #[test]
    fn events_do_not_depend_on_chunking(
        bytes in sse_bytes(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = read(vec![bytes.clone()], None);
        let cut = read(chunked(&bytes, &cuts), None);
        let bytewise = read(bytes.iter().map(|b| vec![*b]).collect(), None);
        prop_assert_eq!(&whole, &cut);
        prop_assert_eq!(&whole, &bytewise);
        prop_assert!(whole.1.is_none(), "within the default limits: {:?}", whole.1);
    }

    /// With small limits, no event carries more data than allowed and no more is read than
    /// the budget; passing either ends the stream with a limit error, never a panic.
    #[test]
    fn limits_hold_for_any_bytes(
        bytes in sse_bytes(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        max_event in 1usize..64,
        budget in 1u64..256,
    ) {
        let (events, _) = read(chunked(&bytes, &cuts), Some((max_event, budget)));
        let mut total = 0;
        for event in &events {
            prop_assert!(event.data.len() <= max_event, "{} > {max_event}", event.data.len());
            total += event.data.len();
        }
        prop_assert!(total as u64 <= budget);
    }
}
