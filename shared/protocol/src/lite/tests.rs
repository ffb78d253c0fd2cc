//! The codec and the mappings against the public description's examples, its schema, and the
//! edges where a parser could guess wrong.

use serde_json::json;

use super::card::{lite_mode, media_type, LITE_MODES};
use super::marker::check_value;
use super::render::{result_message, status_message, MAX_BODY_CHARS};
use super::*;
use crate::{
    AgentCapabilities, AgentCard, AgentSkill, Artifact, Message, Part, Task, TaskState, TaskStatus,
};

fn ok(text: &str) -> LiteMessage {
    match parse(text) {
        Ok(Some(message)) => message,
        other => panic!("{text:?} should parse, got {other:?}"),
    }
}

fn err(text: &str) -> LiteError {
    match parse(text) {
        Err(e) => e,
        other => panic!("{text:?} should be refused, got {other:?}"),
    }
}

fn task(id: &str) -> LiteKind {
    LiteKind::Task {
        id: id.into(),
        skill: None,
        priority: None,
    }
}

#[test]
fn text_without_a_marker_on_its_first_line_is_chat() {
    for text in [
        "",
        "   \n  ",
        "hello there",
        "see [A2A:task id=x] above",
        "hi\n[A2A:task id=x]",
        "[A2A]",
        "[A2A] task id=x",
        "[A2Ax:task id=x]",
        "[B2A:task id=x]",
        "(A2A:task id=x)",
        "A2A:task id=x",
        "[附件: report.md]",
    ] {
        assert_eq!(parse(text), Ok(None), "{text:?}");
    }
}

#[test]
fn the_public_examples_parse() {
    let m = ok("[A2A:discover]\n请告诉我你能做什么？");
    assert_eq!(m.kind, LiteKind::Discover);
    assert_eq!(m.body, "请告诉我你能做什么？");

    let m = ok("[A2A:card]\n我是佳佳，运行在 Clawdbot 上。\n我的主要能力：\n- 调研助手");
    assert_eq!(m.kind, LiteKind::Card);
    assert!(m.body.starts_with("我是佳佳") && m.body.ends_with("- 调研助手"));

    let m = ok("[A2A:task id=research-001]\n帮我调研一下 \"AI Agent 生态的最新进展\"，时间范围过去一周。\n预计需要的输出：markdown 报告文件。");
    assert_eq!(m.kind, task("research-001"));
    assert_eq!(m.body.lines().count(), 2);

    let m = ok("[A2A:status task=research-001 state=working]\n正在收集资料，预计还需要 10 分钟。");
    assert_eq!(
        m.kind,
        LiteKind::Status {
            task: "research-001".into(),
            state: LiteState::Working,
            progress: None,
            eta: None
        }
    );

    let m = ok("[A2A:result task=research-001 state=completed]\n调研报告已完成，见附件。\n[附件: ai-agent-research-2026-02.md]");
    assert_eq!(
        m.kind,
        LiteKind::Result {
            task: "research-001".into(),
            state: LiteState::Completed,
            artifacts: None
        }
    );
    assert_eq!(m.body, "调研报告已完成，见附件。");
    assert_eq!(
        m.attachments,
        vec![Attachment::named("ai-agent-research-2026-02.md")]
    );

    let m = ok("[A2A:task id=email-001 skill=email]\n帮我把这份调研报告发给鲁伊科斯塔。\n收件人：5155280@qq.com\n[附件: ai-agent-research.md]");
    assert_eq!(
        m.kind,
        LiteKind::Task {
            id: "email-001".into(),
            skill: Some("email".into()),
            priority: None
        }
    );
    assert_eq!(m.attachments.len(), 1);
    assert!(m.body.ends_with("收件人：5155280@qq.com"));

    let m = ok("[A2A:status task=task-123 state=working progress=50%]");
    assert_eq!(
        m.kind,
        LiteKind::Status {
            task: "task-123".into(),
            state: LiteState::Working,
            progress: Some("50%".into()),
            eta: None
        }
    );
    assert_eq!(m.body, "");

    for (text, state) in [
        (
            "[A2A:status task=email-001 state=accepted]\n收到",
            LiteState::Accepted,
        ),
        (
            "[A2A:status task=research-001 state=failed]\n无法完成此任务",
            LiteState::Failed,
        ),
    ] {
        assert!(matches!(ok(text).kind, LiteKind::Status { state: s, .. } if s == state));
    }
}

#[test]
fn every_type_reads_its_own_parameters() {
    assert_eq!(
        ok("[A2A:task id=t1 skill=research priority=high]").kind,
        LiteKind::Task {
            id: "t1".into(),
            skill: Some("research".into()),
            priority: Some("high".into())
        }
    );
    assert_eq!(
        ok("[A2A:status task=t1 state=working progress=3/4 eta=10m]").kind,
        LiteKind::Status {
            task: "t1".into(),
            state: LiteState::Working,
            progress: Some("3/4".into()),
            eta: Some("10m".into())
        }
    );
    assert_eq!(
        ok("[A2A:result task=t1 state=failed artifacts=2]").kind,
        LiteKind::Result {
            task: "t1".into(),
            state: LiteState::Failed,
            artifacts: Some("2".into())
        }
    );
    assert_eq!(
        ok("[A2A:cancel task=t1 reason=obsolete]").kind,
        LiteKind::Cancel {
            task: "t1".into(),
            reason: Some("obsolete".into())
        }
    );
    assert_eq!(
        ok("[A2A:ack task=t1]").kind,
        LiteKind::Ack { task: "t1".into() }
    );
    for (text, id) in [
        ("[A2A:task id=t1]", Some("t1")),
        ("[A2A:ack task=t2]", Some("t2")),
        ("[A2A:cancel task=t3]", Some("t3")),
        ("[A2A:status task=t4 state=working]", Some("t4")),
        ("[A2A:result task=t5 state=failed]", Some("t5")),
        ("[A2A:discover]", None),
        ("[A2A:card]", None),
        ("[A2A:other task=t6]", None),
    ] {
        assert_eq!(ok(text).kind.task_id(), id, "{text}");
    }
}

#[test]
fn spacing_and_case_are_tolerated_where_the_examples_vary() {
    for text in [
        "[a2a:task id=x]",
        "[A2A:Task id=x]",
        "[A2A:TASK ID=x]",
        "[ A2A : task id=x ]",
        "[A2A:task  id=x]",
        "[A2A:task\tid=x]",
        "   [A2A:task id=x]   ",
        "\n\n  [A2A:task id=x]",
        "\u{feff}[A2A:task id=x]",
    ] {
        assert_eq!(ok(text).kind, task("x"), "{text:?}");
    }
    // Values keep their case: ids are the requester's.
    assert_eq!(ok("[A2A:task id=Research-001]").kind, task("Research-001"));
    // The body may start on the marker's line, and CRLF line ends are read as LF.
    let m = ok("[A2A:task id=x] do this\r\nand that\r\n");
    assert_eq!(m.body, "do this\nand that");
    for (state, expected) in [
        ("Working", LiteState::Working),
        ("CANCELLED", LiteState::Cancelled),
        ("canceled", LiteState::Cancelled),
        ("input_required", LiteState::InputRequired),
        ("Input-Required", LiteState::InputRequired),
    ] {
        let text = format!("[A2A:status task=x state={state}]");
        assert!(
            matches!(ok(&text).kind, LiteKind::Status { state: s, .. } if s == expected),
            "{text}"
        );
    }
}

#[test]
fn ambiguous_or_incomplete_markers_are_refused_with_a_readable_reason() {
    for (text, says) in [
        ("[A2A:task id=x", "not closed"),
        ("[A2A:]", "names no type"),
        ("[A2A:  ]", "names no type"),
        ("[A2A:ta$k id=x]", "not a message type"),
        ("[A2A:task]", "needs id="),
        ("[A2A:task skill=research]", "needs id="),
        ("[A2A:task research-001]", "not key=value"),
        ("[A2A:task id = x]", "not key=value"),
        ("[A2A:task id=]", "not key=value"),
        ("[A2A:task =x]", "not key=value"),
        ("[A2A:task id=x id=y]", "given twice"),
        ("[A2A:task id=x ID=y]", "given twice"),
        ("[A2A:status task=x]", "needs state="),
        ("[A2A:status state=working]", "needs task="),
        ("[A2A:result task=x]", "needs state="),
        ("[A2A:status task=x state=50%]", "not a task state"),
        ("[A2A:cancel]", "needs task="),
        ("[A2A:cancel reason=x]", "needs task="),
        ("[A2A:ack]", "needs task="),
    ] {
        let e = err(text);
        assert!(e.message.contains(says), "{text:?}: {}", e.message);
        // A sentence for a person, never a Rust error.
        assert!(e.message.ends_with('.'), "{text:?}: {}", e.message);
    }
    let long = "x".repeat(MAX_LITE_TASK_ID_LEN + 1);
    assert!(err(&format!("[A2A:task id={long}]"))
        .message
        .contains("at most"));
    assert!(parse(&format!(
        "[A2A:task id={}]",
        "y".repeat(MAX_LITE_TASK_ID_LEN)
    ))
    .is_ok());
}

#[test]
fn an_error_names_the_task_when_the_marker_got_that_far() {
    assert_eq!(err("[A2A:task id=t7 id=t8]").task.as_deref(), Some("t7"));
    assert_eq!(
        err("[A2A:status task=t7 state=?!]").task.as_deref(),
        Some("t7")
    );
    assert_eq!(err("[A2A:task id=t7 oops]").task.as_deref(), Some("t7"));
    assert_eq!(err("[A2A:task]").task, None);
}

#[test]
fn unknown_types_and_parameters_are_kept_for_receivers_to_ignore() {
    let m = ok("[A2A:handoff to=bob]\nplease");
    assert_eq!(
        m.kind,
        LiteKind::Other {
            name: "handoff".into()
        }
    );
    assert_eq!(m.extra, vec![("to".into(), "bob".into())]);
    let m = ok("[A2A:task id=x deadline=friday]");
    assert_eq!(m.kind, task("x"));
    assert_eq!(m.extra, vec![("deadline".into(), "friday".into())]);
    // An unknown state is kept too (states may be added), and is not terminal.
    let m = ok("[A2A:status task=x state=paused]");
    assert!(
        matches!(&m.kind, LiteKind::Status { state: LiteState::Other(s), .. } if s == "paused")
    );
    assert!(!LiteState::Other("paused".into()).is_terminal());
    // A value may hold '=' (it is split at the first one).
    assert_eq!(
        ok("[A2A:task id=a=b]").kind.task_id(),
        Some("a=b"),
        "split at the first ="
    );
}

#[test]
fn attachment_lines_end_a_message() {
    let m = ok("[A2A:result task=x state=completed]\nDone.\n\n[附件: a.md]\n[附件：b.md]\n[attachment: c.pdf] https://files.example/c.pdf\n\n");
    assert_eq!(m.body, "Done.");
    assert_eq!(
        m.attachments,
        vec![
            Attachment::named("a.md"),
            Attachment::named("b.md"),
            Attachment {
                name: "c.pdf".into(),
                url: Some("https://files.example/c.pdf".into())
            }
        ]
    );
    // An attachment line in the middle is part of the body.
    let m = ok("[A2A:task id=x]\n[附件: a.md]\nthen this");
    assert!(m.attachments.is_empty());
    assert_eq!(m.body, "[附件: a.md]\nthen this");
    // Not attachment lines: no name, another label, text after the bracket.
    for line in ["[附件: ]", "[note: a.md]", "[附件: a.md] see this file"] {
        let m = ok(&format!("[A2A:task id=x]\n{line}"));
        assert!(m.attachments.is_empty(), "{line}");
        assert_eq!(m.body, line);
    }
}

#[test]
fn what_is_formatted_parses_back_the_same() {
    let mut kinds = vec![
        LiteKind::Discover,
        LiteKind::Card,
        task("t-1"),
        LiteKind::Task {
            id: "t.2".into(),
            skill: Some("research".into()),
            priority: Some("low".into()),
        },
        LiteKind::Cancel {
            task: "t-1".into(),
            reason: Some("changed-my-mind".into()),
        },
        LiteKind::Ack { task: "t-1".into() },
    ];
    for state in LiteState::ALL {
        kinds.push(LiteKind::Status {
            task: "t-1".into(),
            state: state.clone(),
            progress: Some("10%".into()),
            eta: Some("5m".into()),
        });
        kinds.push(LiteKind::Result {
            task: "t-1".into(),
            state,
            artifacts: None,
        });
    }
    for kind in kinds {
        for (body, attachments) in [
            ("", vec![]),
            ("one line", vec![]),
            ("two\nlines", vec![Attachment::named("r.md")]),
        ] {
            let message = LiteMessage {
                kind: kind.clone(),
                extra: vec![("x-extra".into(), "1".into())],
                body: body.into(),
                attachments,
            };
            let text = message.to_string();
            assert_eq!(ok(&text), message, "{text}");
        }
    }
}

#[test]
fn formatting_never_writes_a_marker_that_reads_back_differently() {
    let m = LiteMessage::new(task("two words]"), "body");
    assert_eq!(m.marker(), "[A2A:task id=two_words_]");
    assert_eq!(ok(&m.to_string()).kind, task("two_words_"));
    assert!(check_value("two words").is_err());
    assert!(check_value("a]b").is_err());
    assert!(check_value("").is_err());
    assert!(check_value("research-001").is_ok());
    let attachment = Attachment::named("a]b\nc");
    assert_eq!(attachment.to_string(), "[附件: a_b_c]");
}

#[test]
fn states_map_both_ways() {
    for state in LiteState::ALL {
        let a2a = state.to_a2a().expect("every 1.0 state has an A2A one");
        assert_eq!(LiteState::from_a2a(a2a), Some(state.clone()));
        assert_eq!(state.is_terminal(), a2a.is_terminal(), "{state}");
        assert_eq!(LiteState::parse(state.as_str()), Ok(state));
    }
    assert_eq!(
        LiteState::from_a2a(TaskState::AuthRequired),
        Some(LiteState::InputRequired)
    );
    assert_eq!(LiteState::from_a2a(TaskState::Unspecified), None);
    assert_eq!(LiteState::Other("paused".into()).to_a2a(), None);
    assert_eq!(LiteState::Cancelled.to_a2a(), Some(TaskState::Canceled));
    assert_eq!(LiteState::Accepted.to_a2a(), Some(TaskState::Submitted));
}

fn a2a_card() -> AgentCard {
    AgentCard {
        name: "Reference Agent".into(),
        description: "The demo agent.".into(),
        version: "0.1.0".into(),
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into(), "image/png".into()],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            ..Default::default()
        },
        skills: vec![
            AgentSkill {
                id: "echo".into(),
                name: "Echo".into(),
                description: "Says it back.".into(),
                ..Default::default()
            },
            AgentSkill {
                id: "scan".into(),
                name: "Scan".into(),
                description: "Reads documents.".into(),
                input_modes: vec!["application/pdf".into(), "image/jpeg".into()],
                output_modes: vec!["application/vnd.api+json".into()],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

#[test]
fn an_a2a_card_becomes_a_lite_card_of_the_agent_in_the_room() {
    let options = LiteCardOptions {
        channels: vec!["matrix:!room:example.org".into()],
        a2a_agent_card: Some("https://agent.example/.well-known/agent-card.json".into()),
        ..Default::default()
    };
    let lite = LiteCard::from_a2a(&a2a_card(), &options);
    lite.validate().expect("a valid card");
    assert_eq!(lite.protocol, LITE_PROTOCOL);
    assert_eq!(lite.agent.id, "reference-agent");
    assert_eq!(lite.agent.framework, "other");
    assert_eq!(lite.agent.version.as_deref(), Some("0.1.0"));
    assert_eq!(lite.skills[0].input_modes, vec!["text"]);
    assert_eq!(lite.skills[0].output_modes, vec!["text", "image"]);
    assert_eq!(lite.skills[1].input_modes, vec!["file", "image"]);
    assert_eq!(lite.skills[1].output_modes, vec!["text"]);
    let caps = lite.capabilities.clone().unwrap();
    assert_eq!(caps.streaming, Some(false), "a room shows whole messages");
    assert_eq!(caps.async_tasks, Some(true));
    let json = serde_json::to_value(&lite).unwrap();
    assert_eq!(json["channels"], json!(["matrix:!room:example.org"]));
    assert_eq!(json["skills"][1]["inputModes"], json!(["file", "image"]));
    assert_eq!(json["capabilities"]["fileTransfer"], json!(false));
    assert_eq!(json["capabilities"]["asyncTasks"], json!(true));
    assert_eq!(
        json["a2aAgentCard"],
        json!("https://agent.example/.well-known/agent-card.json")
    );
    assert!(json.get("limits").is_none() && json.get("contact").is_none());
    assert!(!json.to_string().contains("null"), "{json}");
    // A chosen agent id wins; a name with nothing usable in it still gives one.
    let named = LiteCardOptions {
        agent_id: "helper".into(),
        ..Default::default()
    };
    assert_eq!(LiteCard::from_a2a(&a2a_card(), &named).agent.id, "helper");
    let odd = AgentCard {
        name: "!!!".into(),
        ..a2a_card()
    };
    assert_eq!(
        LiteCard::from_a2a(&odd, &Default::default()).agent.id,
        "agent"
    );
}

const JIAJIA: &str = r#"{
  "protocol": "a2a-lite/1.0",
  "agent": {"id": "jiajia", "name": "佳佳", "framework": "clawdbot", "version": "0.x"},
  "skills": [
    {"id": "research", "name": "调研助手", "description": "收集和分析特定主题的资料",
     "inputModes": ["text"], "outputModes": ["text", "file"]},
    {"id": "podcast-script", "name": "播客脚本", "description": "创作播客口播稿",
     "inputModes": ["text", "file"], "outputModes": ["text", "file"]}
  ],
  "capabilities": {"streaming": false, "fileTransfer": true, "asyncTasks": false},
  "limits": {"maxFileSize": "10MB", "maxConcurrentTasks": 2},
  "contact": {"human": "鲁伊科斯塔", "timezone": "Asia/Shanghai"},
  "channels": ["discord:jiajia"],
  "somethingNew": {"a": 1}
}"#;

#[test]
fn a_lite_card_is_read_against_its_schema_and_becomes_an_a2a_card() {
    let lite = LiteCard::from_json(JIAJIA).expect("the public example is valid");
    assert_eq!(lite.limits.as_ref().unwrap().max_concurrent_tasks, Some(2));
    let card = lite.to_a2a();
    assert_eq!(card.name, "佳佳");
    assert_eq!(card.version, "0.x");
    assert_eq!(card.skills.len(), 2);
    assert_eq!(card.skills[0].id, "research");
    assert_eq!(card.skills[0].input_modes, vec!["text/plain"]);
    assert_eq!(
        card.skills[0].output_modes,
        vec!["text/plain", "application/octet-stream"]
    );
    assert_eq!(card.skills[0].tags, vec!["clawdbot"]);
    assert_eq!(
        card.default_input_modes,
        vec!["text/plain", "application/octet-stream"]
    );
    assert_eq!(card.capabilities.streaming, Some(false));
    assert_eq!(card.capabilities.push_notifications, Some(false));
    assert!(card.supported_interfaces.is_empty());
    // A card with no skills still has default modes.
    let bare = LiteCard::from_json(
        r#"{"protocol":"a2a-lite/2.13","agent":{"id":"a","name":"A","framework":"other"},"skills":[]}"#,
    )
    .unwrap();
    assert_eq!(bare.to_a2a().default_input_modes, vec!["text/plain"]);
}

#[test]
fn cards_that_break_the_schema_are_refused() {
    let base: serde_json::Value = serde_json::from_str(JIAJIA).unwrap();
    let with = |path: &[&str], value: serde_json::Value| {
        let mut card = base.clone();
        let mut at = &mut card;
        for key in &path[..path.len() - 1] {
            at = &mut at[*key];
        }
        let last = path[path.len() - 1];
        if value.is_null() {
            at.as_object_mut().unwrap().remove(last);
        } else {
            at[last] = value;
        }
        card.to_string()
    };
    for (text, says) in [
        (with(&["protocol"], json!("a2a-lite/1")), "protocol"),
        (with(&["protocol"], json!("A2A-lite/1.0")), "protocol"),
        (with(&["protocol"], json!("a2a-lite/1.0.1")), "protocol"),
        (with(&["protocol"], json!("a2a-lite/x.0")), "protocol"),
        (
            with(&["agent", "framework"], json!("langchain")),
            "framework",
        ),
        (with(&["agent", "name"], json!(null)), "name"),
        (with(&["skills"], json!(null)), "skills"),
        (with(&["protocol"], json!(null)), "protocol"),
        (
            with(&["skills"], json!([{"id": "a", "name": "A"}])),
            "description",
        ),
        (
            with(
                &["skills"],
                json!([{"id": "a", "name": "A", "description": "d", "inputModes": ["pdf"]}]),
            ),
            "pdf",
        ),
        ("not json".to_owned(), "not a valid"),
    ] {
        let e = LiteCard::from_json(&text).expect_err(says);
        assert!(e.message.contains(says), "{says}: {}", e.message);
    }
}

#[test]
fn a_card_message_says_it_in_prose_and_carries_the_json() {
    let lite = LiteCard::from_a2a(&a2a_card(), &Default::default());
    let body = lite.message_body();
    assert!(body.starts_with("I am Reference Agent (version 0.1.0). The demo agent."));
    assert!(body.contains("- Echo (skill=echo): Says it back."));
    assert!(body.contains("[A2A:task id=<your id> skill=<skill>]"));
    assert!(body.contains("Streaming: no."));
    assert_eq!(LiteCard::from_message_body(&body), Some(Ok(lite.clone())));
    // Without a fence, the JSON from the first { to the last }.
    let bare = format!("Hello.\n{}", serde_json::to_string(&lite).unwrap());
    assert_eq!(LiteCard::from_message_body(&bare), Some(Ok(lite)));
    assert_eq!(
        LiteCard::from_message_body("我是佳佳，运行在 Clawdbot 上。"),
        None
    );
    assert!(matches!(
        LiteCard::from_message_body("```json\n{\"protocol\": 1}\n```"),
        Some(Err(_))
    ));
}

#[test]
fn media_types_and_modes_map_as_the_table_says() {
    for (media, mode) in [
        ("text/plain", "text"),
        ("text/markdown", "text"),
        ("application/json", "text"),
        ("application/ld+json", "text"),
        ("image/png", "image"),
        ("IMAGE/JPEG", "image"),
        ("audio/mpeg", "audio"),
        ("video/mp4", "video"),
        ("application/pdf", "file"),
        ("application/octet-stream", "file"),
        ("nonsense", "file"),
    ] {
        assert_eq!(lite_mode(media), mode, "{media}");
    }
    for mode in LITE_MODES {
        assert_eq!(lite_mode(media_type(mode)), mode);
    }
}

fn status(state: TaskState, text: Option<&str>) -> TaskStatus {
    TaskStatus {
        state,
        message: text.map(Message::agent_text),
        timestamp: None,
    }
}

#[test]
fn working_and_waiting_tasks_become_status_messages() {
    let m = status_message("t1", &status(TaskState::Working, Some("step 1/3"))).unwrap();
    assert_eq!(
        m.to_string(),
        "[A2A:status task=t1 state=working]\nstep 1/3"
    );
    let m = status_message("t1", &status(TaskState::Working, None)).unwrap();
    assert_eq!(m.body, "Working on it.");
    for state in [TaskState::InputRequired, TaskState::AuthRequired] {
        let m = status_message("t1", &status(state, Some("Which year?"))).unwrap();
        let text = m.to_string();
        assert!(
            text.starts_with("[A2A:status task=t1 state=input-required]\nWhich year?\n"),
            "{text}"
        );
        assert!(text.contains("[A2A:task id=t1]"), "{text}");
        // A person's answer starting with the marker it suggests is a valid task message.
        assert!(parse(text.lines().last().unwrap()).is_ok());
    }
    for state in [
        TaskState::Submitted,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::Rejected,
        TaskState::Unspecified,
    ] {
        assert_eq!(status_message("t1", &status(state, Some("x"))), None);
    }
}

fn text_artifact(name: &str, text: &str) -> Artifact {
    Artifact {
        artifact_id: name.into(),
        name: name.into(),
        parts: vec![Part::text(text)],
        ..Default::default()
    }
}

#[test]
fn ended_tasks_become_results_with_their_output() {
    // An echo says its output as its last words too: once is enough.
    let echo = Task {
        id: "a2a-1".into(),
        status: status(TaskState::Completed, Some("hello")),
        artifacts: vec![text_artifact("echo", "hello")],
        ..Default::default()
    };
    assert_eq!(
        result_message("t1", &echo).to_string(),
        "[A2A:result task=t1 state=completed]\nhello"
    );
    // Several artifacts go under their names; files become attachment lines.
    let report = Task {
        id: "a2a-2".into(),
        status: status(TaskState::Completed, Some("Report ready.")),
        artifacts: vec![
            text_artifact("summary", "All good."),
            Artifact {
                artifact_id: "f".into(),
                name: "files".into(),
                parts: vec![
                    Part {
                        filename: "out.txt".into(),
                        ..Part::raw(b"x".to_vec())
                    },
                    Part::url("https://files.example/r/report.pdf"),
                    Part::data(json!({"count": 42})),
                ],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let m = result_message("t2", &report);
    assert_eq!(
        m.body,
        "Report ready.\n\nsummary:\nAll good.\n\nfiles:\n{\"count\":42}"
    );
    assert_eq!(
        m.attachments,
        vec![
            Attachment::named("out.txt"),
            Attachment {
                name: "report.pdf".into(),
                url: Some("https://files.example/r/report.pdf".into())
            }
        ]
    );
    assert_eq!(ok(&m.to_string()), m, "the room can read it back");
    // Failed, cancelled, rejected: the state and the reason.
    for (state, lite, said, expected) in [
        (
            TaskState::Failed,
            "failed",
            Some("No access."),
            "No access.",
        ),
        (
            TaskState::Canceled,
            "cancelled",
            None,
            "The task ended cancelled.",
        ),
        (
            TaskState::Rejected,
            "rejected",
            Some("Not mine."),
            "Not mine.",
        ),
        (TaskState::Completed, "completed", None, "Done."),
    ] {
        let t = Task {
            status: status(state, said),
            ..Default::default()
        };
        assert_eq!(
            result_message("t3", &t).to_string(),
            format!("[A2A:result task=t3 state={lite}]\n{expected}")
        );
    }
}

#[test]
fn long_output_is_cut_with_a_pointer_to_the_a2a_task() {
    let t = Task {
        id: "a2a-9".into(),
        status: status(TaskState::Completed, None),
        artifacts: vec![text_artifact("big", &"x".repeat(MAX_BODY_CHARS + 10))],
        ..Default::default()
    };
    let m = result_message("t9", &t);
    assert!(m.body.ends_with("the whole output is in A2A task a2a-9)"));
    assert!(m.body.chars().count() < MAX_BODY_CHARS + 100);
}
