//! The public agent card at `/.well-known/agent-card.json`.

use a2a_e2e::*;
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
    // 1.0 first, then the same URLs in the A2A 1.1 draft.
    assert_eq!(
        interfaces.len(),
        4,
        "two interfaces, in 1.0 and 1.1: {card}"
    );
    let versions: Vec<&str> = interfaces
        .iter()
        .map(|i| i["protocolVersion"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.0", "1.0", "1.1", "1.1"], "{card}");
    for (v10, v11) in interfaces[..2].iter().zip(&interfaces[2..]) {
        assert_eq!(v10["url"], v11["url"]);
        assert_eq!(v10["protocolBinding"], v11["protocolBinding"]);
    }
    let interfaces = &interfaces[..2];
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

#[tokio::test]
async fn the_card_is_signed_with_the_published_keys() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let resolver = a2a_client::Client::builder().card_resolver().unwrap();
    let fetched = resolver.resolve(server.base()).await.unwrap();
    let signature = resolver.verify(&fetched).await.expect("the card verifies");
    let jwks = fetch_json(&server, "/.well-known/jwks.json").await;
    assert!(
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["kid"] == signature.kid.as_str()),
        "signed by a published key: {jwks}"
    );
    let header =
        a2a_push_verify::card::protected_header(&fetched.card.signatures[0].protected).unwrap();
    assert_eq!(
        header.jku.as_deref(),
        Some(server.url("/.well-known/jwks.json").as_str())
    );
    // The card a 0.3 client reads (no A2A-Version) carries the same signatures: they cover
    // the 1.0 members, which a verifier reads.
    let v03 = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json")),
        )
        .await;
    let v03_card: a2a_protocol::AgentCard = serde_json::from_value(v03.body.clone()).unwrap();
    assert_eq!(v03_card.signatures, fetched.card.signatures, "{}", v03.body);
    let mut as_read = fetched.clone();
    as_read.card = v03_card;
    resolver
        .verify(&as_read)
        .await
        .expect("the 0.3 document verifies too");
    // Any change to what was signed is refused.
    let mut tampered = fetched.clone();
    tampered.card.skills.pop();
    let err = resolver.verify(&tampered).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("no signature of the card verifies"),
        "{err}"
    );
    // A signature whose keys are elsewhere is not taken on that other host's word.
    let mut elsewhere = fetched.clone();
    for signature in &mut elsewhere.card.signatures {
        let mut header: Value = serde_json::from_slice(
            &base64::Engine::decode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                &signature.protected,
            )
            .unwrap(),
        )
        .unwrap();
        header["jku"] = "http://127.0.0.1:9/.well-known/jwks.json".into();
        signature.protected = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            header.to_string(),
        );
    }
    // (The JWKS beside the card is used instead, and the changed header no longer verifies.)
    assert!(resolver.verify(&elsewhere).await.is_err());
}

#[tokio::test]
async fn the_whole_surface_is_served_under_a_base_path() {
    if !store_ready() {
        return;
    }
    let server = Server::start_with_env(&[("A2A_BASE_PATH", "/agents/a2a/")]).await;
    // The base URL the server announces includes the prefix (normalised, no trailing slash).
    assert!(server.base().ends_with("/agents/a2a"), "{}", server.base());
    let card = fetch_json(&server, "/.well-known/agent-card.json").await;
    for iface in card["supportedInterfaces"].as_array().unwrap() {
        assert!(
            iface["url"].as_str().unwrap().starts_with(server.base()),
            "interface URLs include the base path: {iface}"
        );
    }
    // Both bindings, their streams, the JWKS and the signature's jku, under the prefix.
    for b in Binding::ALL {
        let task = ok(server.send(b, send_request("hello")).await);
        assert_eq!(state(task_of(&task)), "TASK_STATE_COMPLETED", "{task}");
        let mut stream = server.stream(b, send_request("slow 2 10")).await.unwrap();
        let events = stream.collect_to_end(EVENT_TIMEOUT).await;
        assert!(events.len() >= 3, "{events:?}");
    }
    let resolver = a2a_client::Client::builder().card_resolver().unwrap();
    let fetched = resolver.resolve(server.base()).await.unwrap();
    resolver
        .verify(&fetched)
        .await
        .expect("verifies with the JWKS under the prefix");
    // Through a client that finds everything from the card alone.
    let client = a2a_client::Client::connect(server.base()).await.unwrap();
    let sent = client.send_message(client.text("hello")).await.unwrap();
    assert!(matches!(sent, a2a_protocol::SendMessageResponse::Task(_)));
    // Outside the prefix, nothing: the same 404 as an unknown route.
    let root = server.base().trim_end_matches("/agents/a2a").to_string();
    for path in [
        "/.well-known/agent-card.json",
        "/message:send",
        "/jsonrpc",
        "/agents/message:send",
    ] {
        let response = server
            .send_raw(
                server
                    .http()
                    .get(format!("{root}{path}"))
                    .header("A2A-Version", A2A_VERSION),
            )
            .await;
        assert_eq!(response.status, 404, "{path}: {}", response.body);
    }
}

async fn fetch_json(server: &Server, path: &str) -> Value {
    let response = server
        .send_raw(
            server
                .http()
                .get(server.url(path))
                .header("A2A-Version", A2A_VERSION),
        )
        .await;
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    response.body
}
