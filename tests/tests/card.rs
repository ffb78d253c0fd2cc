//! The public agent card at `/.well-known/agent-card.json`.

use a2a_e2e::{store_ready, Server, A2A_VERSION};
use serde_json::Value;

async fn fetch_card(server: &Server) -> a2a_e2e::RestResponse {
    server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json"))
                .header("A2A-Version", A2A_VERSION),
        )
        .await
}

fn non_empty_str(v: &Value, what: &str) {
    assert!(
        v.as_str().is_some_and(|s| !s.is_empty()),
        "{what} is a non-empty string: {v}"
    );
}

#[tokio::test]
async fn card_has_the_required_fields_and_both_interfaces() {
    if !store_ready() {
        return;
    }
    // The 1.0-only card: with 0.3 on (the default, issue #16) the card also carries the 0.3
    // interfaces and top-level fields, which `tests/v03.rs` checks.
    let server = Server::start_with_env(&[("A2A_PROTOCOL_0_3", "off")]).await;
    let response = fetch_card(&server).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .header("content-type")
            .is_some_and(|ct| ct.starts_with("application/json")),
        "the card is served as application/json: {:?}",
        response.headers
    );
    let card = &response.body;
    // It parses as the protocol type.
    let typed: a2a_protocol::AgentCard =
        serde_json::from_value(card.clone()).expect("the card parses as an AgentCard");
    assert!(!typed.skills.is_empty());

    non_empty_str(&card["name"], "name");
    non_empty_str(&card["description"], "description");
    non_empty_str(&card["version"], "version");
    for field in ["defaultInputModes", "defaultOutputModes", "skills"] {
        assert!(
            card[field].as_array().is_some_and(|a| !a.is_empty()),
            "{field} is a non-empty array: {card}"
        );
    }
    for skill in card["skills"].as_array().unwrap() {
        for field in ["id", "name", "description"] {
            non_empty_str(&skill[field], &format!("skill.{field}"));
        }
        assert!(
            skill["tags"].as_array().is_some_and(|t| !t.is_empty()),
            "skill.tags is non-empty: {skill}"
        );
    }
    // 0.3 leftovers are gone.
    for legacy in [
        "url",
        "preferredTransport",
        "additionalInterfaces",
        "protocolVersion",
    ] {
        assert!(card.get(legacy).is_none(), "no top-level {legacy}: {card}");
    }

    let interfaces = card["supportedInterfaces"]
        .as_array()
        .expect("supportedInterfaces");
    assert_eq!(interfaces.len(), 2, "two interfaces: {card}");
    let jsonrpc: Vec<&Value> = interfaces
        .iter()
        .filter(|i| i["protocolBinding"] == "JSONRPC")
        .collect();
    let rest: Vec<&Value> = interfaces
        .iter()
        .filter(|i| i["protocolBinding"] == "HTTP+JSON")
        .collect();
    assert_eq!(
        (jsonrpc.len(), rest.len()),
        (1, 1),
        "one JSONRPC and one HTTP+JSON: {card}"
    );
    assert_eq!(jsonrpc[0]["url"], format!("{}/jsonrpc", server.base()));
    assert!(
        jsonrpc[0]["url"].as_str().unwrap().ends_with("/jsonrpc"),
        "{}",
        jsonrpc[0]
    );
    assert_eq!(
        rest[0]["url"].as_str().unwrap().trim_end_matches('/'),
        server.base(),
        "the REST interface is the root"
    );
    for iface in interfaces {
        assert_eq!(iface["protocolVersion"], "1.0", "{iface}");
    }

    assert_eq!(card["capabilities"]["streaming"], true, "{card}");
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
    // The extended card is not offered, and the card must not claim it.
    assert_ne!(card["capabilities"]["extendedAgentCard"], true, "{card}");
}

#[tokio::test]
async fn card_has_cache_headers_and_answers_conditional_requests() {
    if !store_ready() {
        return;
    }
    // One document whatever `A2A-Version` says: with 0.3 on (the default, issue #16) a request
    // without the header means 0.3 and gets the card with the 0.3 fields, another document
    // (`tests/v03.rs` checks that negotiation and its `Vary`).
    let server = Server::start_with_env(&[("A2A_PROTOCOL_0_3", "off")]).await;
    let response = fetch_card(&server).await;
    assert_eq!(response.status, 200);

    let cache_control = response.header("cache-control").expect("Cache-Control");
    let max_age = cache_control
        .split(',')
        .map(str::trim)
        .find_map(|d| d.strip_prefix("max-age="))
        .unwrap_or_else(|| panic!("Cache-Control has max-age: {cache_control}"));
    assert!(
        max_age.parse::<u64>().is_ok_and(|n| n > 0),
        "max-age is a positive number: {cache_control}"
    );

    let last_modified = response.header("last-modified").expect("Last-Modified");
    assert!(
        last_modified.ends_with(" GMT") && last_modified.len() == 29,
        "Last-Modified is an IMF-fixdate: {last_modified:?}"
    );

    let etag = response.header("etag").expect("ETag").to_string();
    assert!(
        etag.starts_with('"') || etag.starts_with("W/\""),
        "ETag is quoted: {etag}"
    );

    // Same ETag on a second fetch (the card does not change).
    let again = fetch_card(&server).await;
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    assert_eq!(again.body, response.body);

    let not_modified = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json"))
                .header("If-None-Match", &etag),
        )
        .await;
    assert_eq!(
        not_modified.status, 304,
        "If-None-Match with the ETag gives 304"
    );
    assert_eq!(not_modified.body, Value::Null, "304 has no body");
    assert_eq!(
        not_modified.header("etag"),
        Some(etag.as_str()),
        "304 repeats the ETag"
    );

    let other = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json"))
                .header("If-None-Match", "\"something-else\""),
        )
        .await;
    assert_eq!(other.status, 200, "a different ETag gets the card");
    assert_eq!(other.body, response.body);
}

#[tokio::test]
async fn card_is_public_without_a_version_header() {
    if !store_ready() {
        return;
    }
    // Discovery comes before version negotiation: a client of any version must be able to
    // read the card to learn which versions are served.
    let server = Server::start().await;
    let response = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json")),
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        response.body["supportedInterfaces"][0]["protocolVersion"],
        "1.0"
    );
}
