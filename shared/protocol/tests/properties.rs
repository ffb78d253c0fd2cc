//! Property tests over the parsers a peer reaches in this crate (issue 46): the A2A-Lite marker
//! codec, the 0.3 and early translations, the JSON-RPC envelope. Whatever a peer sends, none
//! panics, each refusal is an error in the protocol's own terms, and where a codec is defined
//! what it writes reads back the same.
//!
//! Case counts stay at proptest's default (256) or below so the test command stays quick.

use a2a_protocol::compat::{inbound, Dialect};
use a2a_protocol::jsonrpc::{Call, Params, Request};
use a2a_protocol::lite::marker::{check_task_id, check_value};
use a2a_protocol::lite::render::{fit, quote, MAX_MESSAGE_CHARS, MAX_QUOTE_CHARS};
use a2a_protocol::lite::{parse, Attachment, LiteCard, LiteKind, LiteMessage, LiteState};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Any JSON value, a few levels deep, with the member names the translations look for among
/// arbitrary ones (so the interesting branches are reached, not only "not an object").
fn json_value() -> impl Strategy<Value = Value> {
    json_value_of(true)
}

/// [`json_value`], without floats when `floats` is false: serde_json reads a float's shortest
/// text back as the nearest value, not always the same bits (its `float_roundtrip` feature is
/// off), which is no concern of the round trips tested here.
fn json_value_of(floats: bool) -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("kind".to_owned()),
        Just("type".to_owned()),
        Just("text".to_owned()),
        Just("file".to_owned()),
        Just("data".to_owned()),
        Just("bytes".to_owned()),
        Just("uri".to_owned()),
        Just("parts".to_owned()),
        Just("content".to_owned()),
        Just("role".to_owned()),
        Just("message".to_owned()),
        Just("messageId".to_owned()),
        Just("metadata".to_owned()),
        Just("configuration".to_owned()),
        Just("blocking".to_owned()),
        Just("pushNotificationConfig".to_owned()),
        Just("pushNotification".to_owned()),
        Just("authentication".to_owned()),
        Just("schemes".to_owned()),
        Just("id".to_owned()),
        Just("taskId".to_owned()),
        Just("sessionId".to_owned()),
        Just("config".to_owned()),
        Just("configId".to_owned()),
        Just("pushNotificationConfigId".to_owned()),
        Just("data_part_compat".to_owned()),
        "[a-z_]{1,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(move |x| if floats { Value::from(x) } else { Value::Null }),
        prop_oneof![
            Just("text".to_owned()),
            Just("file".to_owned()),
            Just("data".to_owned()),
            Just("user".to_owned()),
            Just("agent".to_owned()),
            Just("message".to_owned()),
            ".{0,12}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A value a marker can carry unchanged.
fn marker_value() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._%:/-]{1,24}"
}

fn lite_state() -> impl Strategy<Value = LiteState> {
    prop_oneof![
        Just(LiteState::Accepted),
        Just(LiteState::Working),
        Just(LiteState::InputRequired),
        Just(LiteState::Completed),
        Just(LiteState::Failed),
        Just(LiteState::Cancelled),
        Just(LiteState::Rejected),
        "x[a-z0-9-]{0,8}".prop_map(LiteState::Other),
    ]
}

fn lite_kind() -> impl Strategy<Value = LiteKind> {
    let id = || "[a-zA-Z0-9._-]{1,40}";
    let opt = || proptest::option::of(marker_value());
    prop_oneof![
        Just(LiteKind::Discover),
        Just(LiteKind::Card),
        (id(), opt(), opt()).prop_map(|(id, skill, priority)| LiteKind::Task {
            id,
            skill,
            priority
        }),
        (id(), lite_state(), opt(), opt()).prop_map(|(task, state, progress, eta)| {
            LiteKind::Status {
                task,
                state,
                progress,
                eta,
            }
        }),
        (id(), lite_state(), opt()).prop_map(|(task, state, artifacts)| LiteKind::Result {
            task,
            state,
            artifacts
        }),
        (id(), opt()).prop_map(|(task, reason)| LiteKind::Cancel { task, reason }),
        id().prop_map(|task| LiteKind::Ack { task }),
        "x[a-z0-9-]{0,10}".prop_map(|name| LiteKind::Other { name }),
    ]
}

/// A message as a room carries it: a marker, a body of lines that are not attachment lines
/// (no brackets), attachment lines, and parameters the type does not define.
fn lite_message() -> impl Strategy<Value = LiteMessage> {
    let line = "[a-zA-Z0-9.,!?'][a-zA-Z0-9 .,!?'-]{0,30}[a-zA-Z0-9.,!?']";
    let body = prop::collection::vec(line, 0..4).prop_map(|lines| lines.join("\n"));
    let attachment = (
        "[a-zA-Z0-9._-]{1,16}",
        proptest::option::of("https://[a-z]{1,8}\\.example/[a-z0-9]{0,8}"),
    )
        .prop_map(|(name, url)| Attachment { name, url });
    let extra = prop::collection::btree_map("x-[a-z]{1,6}", marker_value(), 0..3);
    (
        lite_kind(),
        body,
        prop::collection::vec(attachment, 0..3),
        extra,
    )
        .prop_map(|(kind, body, attachments, extra)| LiteMessage {
            kind,
            extra: extra.into_iter().collect(),
            body,
            attachments,
        })
}

/// Text shaped like what reaches the codec: mostly markers with odd parameters, bodies and
/// attachment-like lines, and arbitrary text.
fn chat_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("[A2A:".to_owned()),
        Just("[a2a : task".to_owned()),
        Just("]".to_owned()),
        Just("[".to_owned()),
        Just(" id=".to_owned()),
        Just(" task=".to_owned()),
        Just(" state=".to_owned()),
        Just("=".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("\u{feff}".to_owned()),
        Just("[附件: a.txt] https://x.example/a".to_owned()),
        Just("[附件：".to_owned()),
        Just("status".to_owned()),
        Just("result".to_owned()),
        Just("cancel".to_owned()),
        "\\PC{0,16}",
        ".{0,8}",
    ];
    prop::collection::vec(piece, 0..16).prop_map(|pieces| pieces.concat())
}

proptest! {
    // Failures are printed with their minimal input; no file of them is kept.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The codec reads anything: chat (`None`), a message, or a refusal that says why in a
    /// sentence of bounded length (a peer's text is quoted, not repeated whole).
    #[test]
    fn the_lite_codec_reads_any_text(text in chat_text()) {
        match parse(&text) {
            Ok(_) => {}
            Err(err) => {
                prop_assert!(!err.message.is_empty());
                prop_assert!(err.message.chars().count() < 1_500, "{}", err.message);
                prop_assert!(!err.message.contains('\n'), "{}", err.message);
            }
        }
    }

    /// A refusal quotes a long peer text, never repeats it.
    #[test]
    fn refusals_of_long_markers_stay_short(
        word in "[a-z]{1,4}",
        repeat in 1_000usize..20_000,
        which in 0usize..4,
    ) {
        let long = word.repeat(repeat / word.len() + 1);
        let text = match which {
            0 => format!("[A2A:{long} nope]"),
            1 => format!("[A2A:task id=x {long}]"),
            2 => format!("[A2A:status task=x state={long}-%]"),
            _ => format!("[A2A:task id={long}]"),
        };
        let err = parse(&text).expect_err("a refusal");
        prop_assert!(err.message.chars().count() < 1_500, "{}", err.message.len());
        if let Some(task) = err.task {
            // The task it names is the peer's: the bridge quotes it too.
            prop_assert!(quote(&task).chars().count() <= 2 + 10 * MAX_QUOTE_CHARS + 1);
        }
    }

    /// What the codec writes, it reads back the same.
    #[test]
    fn lite_messages_round_trip(message in lite_message()) {
        let text = message.to_string();
        let read = parse(&text);
        prop_assert_eq!(read, Ok(Some(message)), "{}", text);
    }

    /// The checks of values and ids take any text.
    #[test]
    fn value_checks_take_any_text(text in "\\PC{0,200}|.{0,200}") {
        let _ = check_value(&text);
        let _ = check_task_id(&text, "id");
        let _ = LiteState::parse(&text);
    }

    /// A peer's card, as JSON text, is read or refused, never a panic.
    #[test]
    fn lite_cards_are_read_or_refused(card in json_value(), body in chat_text()) {
        let _ = LiteCard::from_json(&card.to_string());
        let _ = LiteCard::from_message_body(&body);
    }

    /// Every room message fits the bound, with the note inside it; shorter ones are unchanged.
    #[test]
    fn room_messages_fit_the_bound(
        head in "\\PC{0,40}",
        fill in any::<char>(),
        repeat in 0usize..30_000,
        task in proptest::option::of("\\PC{0,200}"),
    ) {
        let text = format!("{head}{}", fill.to_string().repeat(repeat));
        let fitted = fit(&text, task.as_deref());
        prop_assert!(fitted.chars().count() <= MAX_MESSAGE_CHARS);
        if text.chars().count() <= MAX_MESSAGE_CHARS {
            prop_assert_eq!(fitted, text);
        } else {
            prop_assert!(fitted.contains("(cut here"));
        }
    }

    /// A quoted peer text is one line, bounded, and mentions no one.
    #[test]
    fn quotes_say_nothing_of_their_own(text in "\\PC{0,300}|.{0,300}|[@<>!\\n\\r\u{2028}\u{202e}a ]{0,100}") {
        let quoted = quote(&text);
        prop_assert!(quoted.chars().count() <= 2 + 10 * MAX_QUOTE_CHARS + 1);
        for c in ['\n', '\r', '\u{2028}', '\u{2029}', '\u{202e}', '@', '<', '>'] {
            prop_assert!(!quoted.contains(c), "{:?}", quoted);
        }
    }

    /// Every 0.3 / early request the translations take is either a 1.0 request or -32602
    /// (invalid params), whatever its shape.
    #[test]
    fn old_requests_translate_or_are_invalid_params(params in json_value(), proto in any::<bool>()) {
        let results = [
            inbound::send_message(params.clone(), proto, "gen").map(|_| ()),
            inbound::early_send(params.clone(), "gen").map(|_| ()),
            inbound::set_push_config(params.clone()).map(|_| ()),
            inbound::rest_create_push_config(params.clone(), "t1").map(|_| ()),
            inbound::push_config_ref(&params).map(|_| ()),
            inbound::part(params.clone(), "p").map(|_| ()),
            inbound::message(params.clone(), "m", "gen").map(|_| ()),
            inbound::push_config(params.clone(), json!("t1"), "c").map(|_| ()),
        ];
        for result in results {
            if let Err(err) = result {
                prop_assert_eq!(err.json_rpc_code(), -32602, "{}", err);
            }
        }
        let _ = inbound::proto_camel_case(params);
    }

    /// A message whose `parts` is not an array is refused in every version (issue 46,
    /// defect 7: an object was read as python-a2a's one `content`).
    #[test]
    fn parts_that_are_not_an_array_are_refused(parts in json_value(), proto in any::<bool>()) {
        prop_assume!(!parts.is_array());
        let message = json!({"role": "user", "messageId": "m", "parts": parts});
        let err = inbound::send_message(json!({"message": message}), proto, "g")
            .expect_err("not an array");
        prop_assert_eq!(err.json_rpc_code(), -32602);
        let sent = inbound::early_send(json!({"id": "t1", "message": message}), "g");
        prop_assert_eq!(sent.expect_err("not an array").json_rpc_code(), -32602);
    }

    /// 1.0 parts written in an older dialect read back as the same 1.0 parts.
    #[test]
    fn parts_round_trip_through_every_dialect(part in one_part()) {
        for dialect in [Dialect::V03, Dialect::V03Rest, Dialect::Early, Dialect::V03AndEarly] {
            let old = dialect.part(part.clone());
            let back = inbound::part(old.clone(), "p");
            prop_assert_eq!(back.as_ref().ok(), Some(&part), "{:?}: {}", dialect, old);
        }
    }

    /// The JSON-RPC envelope reads any bytes: a request, or an error whose code is one of
    /// JSON-RPC's own (parse error, invalid request, invalid params).
    #[test]
    fn the_json_rpc_envelope_reads_any_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        value in json_value(),
    ) {
        for body in [bytes, value.to_string().into_bytes()] {
            // The envelope read without its params says the same as the full reading.
            let call = Call::parse(&body).map(|c| {
                let params = c.params.into_value().expect("params that parsed once");
                Request { id: c.id, method: c.method.into_owned(), params }
            });
            prop_assert_eq!(&call, &Request::parse(&body));
            if let Err((id, err)) = Request::parse(&body) {
                prop_assert!(
                    [-32700, -32600, -32602].contains(&err.json_rpc_code()),
                    "{}", err
                );
                prop_assert!(matches!(id, Value::Null | Value::String(_) | Value::Number(_)));
            }
        }
    }

    /// A request the envelope accepts reads back as it was written.
    #[test]
    fn json_rpc_requests_round_trip(
        id in prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
        ],
        method in ".{1,24}",
        params in prop::collection::btree_map("[a-z]{1,6}", json_value_of(false), 0..4),
    ) {
        let params = Value::Object(params.into_iter().collect());
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let body = body.to_string();
        let request = Request::parse(body.as_bytes()).expect("a valid request");
        let call = Call::parse(body.as_bytes()).expect("a valid call");
        prop_assert!(matches!(call.params, Params::Text(_)), "read without its params");
        prop_assert_eq!(&call.id, &id);
        prop_assert_eq!(&call.method, &method);
        prop_assert_eq!(call.params.into_value().ok(), Some(params.clone()));
        prop_assert_eq!(request, Request { id, method, params });
    }
}

/// One 1.0 part: text, bytes, a URL or data (an object or any other value), with optional
/// media type, file name and metadata.
fn one_part() -> impl Strategy<Value = Value> {
    let data = prop_oneof![
        json_value_of(false),
        Just(json!({"data": {"k": 1}})),
        Just(json!({"value": 1})),
    ];
    let content = prop_oneof![
        ".{0,16}".prop_map(|t| json!({"text": t})),
        "[A-Za-z0-9+/]{0,12}".prop_map(|b| json!({"raw": b})),
        "https://[a-z]{1,8}\\.example/[a-z]{0,6}".prop_map(|u| json!({"url": u})),
        data.prop_map(|d| json!({"data": d})),
    ];
    // Not empty: an empty metadata object is no metadata to every dialect.
    let metadata = proptest::option::of(
        prop::collection::btree_map("[a-z]{1,6}", json_value_of(false), 1..3)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    );
    (
        content,
        proptest::option::of("[a-z]{1,6}/[a-z]{1,6}"),
        proptest::option::of("[a-z]{1,8}\\.[a-z]{2,3}"),
        metadata,
    )
        .prop_map(|(mut part, media_type, filename, metadata)| {
            let is_file = part.get("raw").is_some() || part.get("url").is_some();
            if is_file {
                if let Some(m) = media_type {
                    part["mediaType"] = m.into();
                }
                if let Some(f) = filename {
                    part["filename"] = f.into();
                }
            }
            if let Some(m) = metadata {
                part["metadata"] = m;
            }
            part
        })
}
