//! Provider failures: each HTTP error class, `retry-after`, retries of transient failures only,
//! unreachable servers, and streams that break off or stall.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::config::{ProviderApi, ProviderConfig};
use switchboard_core::runtime::providers::{ProviderError, RetryPolicy, StreamEvent};
use switchboard_testkit::{MockLlm, MockReply};

use super::{
    CASES, Case, KEY, once, provider_config, quick, request, target, target_with, turn, user,
};

fn rate_limited(headers: &[(&str, &str)]) -> MockReply {
    MockReply::Status {
        status: 429,
        body: json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    }
}

/// Paused time: the waits are virtual, so the test takes no real time and moves the clock
/// only through the waits the code under test makes.
#[tokio::test(start_paused = true)]
async fn rate_limits_are_retried_after_the_time_asked() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        let request = request(&target, vec![user("hi")]);
        mock.push(rate_limited(&[
            ("retry-after-ms", "50"),
            ("retry-after", "7"),
        ]));
        let error = once(&target, &request).await.unwrap_err();
        assert_eq!(
            error.retry_after(),
            Some(Duration::from_millis(50)),
            "{case:?}: {error}"
        );
        assert!(
            matches!(&error, ProviderError::RateLimited { message, .. } if message.contains("Rate limit reached"))
        );

        mock.push(rate_limited(&[("retry-after-ms", "50")]));
        mock.push(MockReply::text("after the wait"));
        // A long backoff: only the server's 50 ms keeps this test quick.
        let policy = RetryPolicy {
            base_delay: Duration::from_secs(20),
            ..target.retry
        };
        let (reply, _) = turn(&target, &request, &policy).await;
        assert_eq!(reply.unwrap().text(), "after the wait", "{case:?}");
    }
    assert_eq!(mock.requests().len(), 12);
    mock.stop().await;
}

/// Paused time: the waits are virtual, so the test takes no real time and moves the clock
/// only through the waits the code under test makes.
#[tokio::test(start_paused = true)]
async fn retry_after_in_seconds_is_honoured() {
    let mock = MockLlm::start().await;
    let target = target(&mock, CASES[2]);
    mock.push(rate_limited(&[("retry-after", "1")]));
    mock.push(MockReply::text("later"));
    let policy = RetryPolicy {
        base_delay: Duration::from_secs(20),
        ..target.retry
    };
    let (reply, _) = turn(&target, &request(&target, vec![user("hi")]), &policy).await;
    assert_eq!(reply.unwrap().text(), "later");
    assert_eq!(mock.requests().len(), 2);

    mock.push(rate_limited(&[("retry-after", "1")]));
    let error = once(&target, &request(&target, vec![user("hi")]))
        .await
        .unwrap_err();
    assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    mock.stop().await;
}

#[tokio::test]
async fn auth_errors_are_not_retried_and_never_show_the_key() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        let before = mock.requests().len();
        mock.push(MockReply::Status {
            status: 401,
            body: json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "authentication_error"}}),
            headers: vec![],
        });
        let (reply, _) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        let error = reply.unwrap_err();
        assert!(
            matches!(error, ProviderError::Auth { status: 401, .. }),
            "{case:?}: {error:?}"
        );
        let shown = error.to_string();
        assert!(
            shown.contains("mock: Incorrect API key provided"),
            "{shown}"
        );
        assert!(
            !shown.contains(KEY) && !format!("{error:?}").contains(KEY),
            "the key leaked: {shown}"
        );
        assert_eq!(
            mock.requests().len(),
            before + 1,
            "{case:?}: an auth error is not retried"
        );
    }
    mock.push(MockReply::status(403, "forbidden"));
    let error = once(
        &target(&mock, CASES[0]),
        &request(&target(&mock, CASES[0]), vec![user("hi")]),
    )
    .await;
    assert!(matches!(
        error,
        Err(ProviderError::Auth { status: 403, .. })
    ));
    mock.stop().await;
}

#[tokio::test]
async fn server_errors_are_retried() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        let request = request(&target, vec![user("hi")]);
        mock.push(MockReply::status(500, "internal"));
        mock.push(MockReply::status(529, "Overloaded"));
        mock.push(MockReply::text("third time lucky"));
        let (reply, events) = turn(&target, &request, &quick(&target)).await;
        assert_eq!(reply.unwrap().text(), "third time lucky", "{case:?}");
        assert!(!events.is_empty());

        mock.push(MockReply::status(503, "unavailable"));
        let error = once(&target, &request).await.unwrap_err();
        assert!(
            matches!(&error, ProviderError::Server { status: 503, message } if message.contains("unavailable"))
        );
    }
    assert_eq!(mock.requests().len(), 16);
    mock.stop().await;
}

#[tokio::test]
async fn an_unreachable_server_is_a_network_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for api in [
        ProviderApi::OpenAiCompletions,
        ProviderApi::AnthropicMessages,
    ] {
        let target = target_with(ProviderConfig {
            api,
            base_url: Some(format!("http://127.0.0.1:{port}/v1")),
            api_key: Some(KEY.into()),
            max_retries: Some(1),
            ..ProviderConfig::default()
        });
        let (reply, _) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        let error = reply.unwrap_err();
        assert!(
            matches!(error, ProviderError::Network { .. }),
            "{api:?}: {error:?}"
        );
        assert!(error.to_string().contains("cannot connect"), "{error}");
        assert!(!error.to_string().contains(KEY));
    }
}

#[tokio::test]
async fn context_overflows_and_bad_requests_are_told_apart() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        let request = request(&target, vec![user("hi")]);
        let overflow = if case.is_openai() {
            json!({"error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
            }})
        } else {
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}})
        };
        mock.push(MockReply::Status {
            status: 400,
            body: overflow,
            headers: vec![],
        });
        let (reply, _) = turn(&target, &request, &quick(&target)).await;
        assert!(
            matches!(reply, Err(ProviderError::ContextLength { .. })),
            "{case:?}: {reply:?}"
        );

        mock.push(MockReply::status(
            400,
            "tools.0.name: String should match pattern",
        ));
        let (reply, _) = turn(&target, &request, &quick(&target)).await;
        let error = reply.unwrap_err();
        assert_eq!(
            error,
            ProviderError::BadRequest {
                status: 400,
                message: "mock: tools.0.name: String should match pattern".into()
            }
        );
    }
    assert_eq!(mock.requests().len(), 8, "neither is retried");
    mock.stop().await;
}

#[tokio::test]
async fn a_stream_cut_midway_is_an_error_and_not_retried() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        let before = mock.requests().len();
        mock.push(MockReply::Cut("partial answer".into()));
        let (reply, events) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        let error = reply.unwrap_err();
        if case.stream {
            assert!(
                matches!(error, ProviderError::Network { .. }),
                "{case:?}: {error:?}"
            );
            // What came before the cut is told (its pieces, however many reads they took).
            let told: String = events
                .iter()
                .map(|e| match e {
                    StreamEvent::TextDelta(text) => text.as_str(),
                    other => panic!("{case:?}: not a text piece: {other:?}"),
                })
                .collect();
            assert!(told.starts_with("partial"), "{case:?}: {told:?}");
            // Text was shown: retrying would show it twice.
            assert_eq!(mock.requests().len(), before + 1);
        } else {
            assert!(
                matches!(error, ProviderError::InvalidResponse { .. }),
                "{case:?}: {error:?}"
            );
        }
    }
    mock.stop().await;
}

/// Paused time: the waits are virtual, so the test takes no real time and moves the clock
/// only through the waits the code under test makes.
#[tokio::test(start_paused = true)]
async fn a_stalled_stream_times_out_instead_of_hanging() {
    let mock = MockLlm::start().await;
    for api in [
        ProviderApi::OpenAiCompletions,
        ProviderApi::AnthropicMessages,
    ] {
        let mut config = provider_config(&mock, Case { api, stream: true });
        config.timeout_seconds = Some(1);
        config.max_retries = Some(0);
        let target = target_with(config);
        mock.push(MockReply::Slow {
            chunks: vec!["partial".into(), " never".into()],
            delay: Duration::from_secs(600),
        });
        let (reply, events) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        let error = reply.unwrap_err();
        assert!(
            matches!(error, ProviderError::Network { .. }),
            "{api:?}: {error:?}"
        );
        assert!(error.to_string().contains("timed out"), "{error}");
        assert_eq!(events, [StreamEvent::TextDelta("partial".into())]);

        mock.push(MockReply::Hang);
        let error = once(&target, &request(&target, vec![user("hi")]))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ProviderError::Network { .. }),
            "{api:?}: {error:?}"
        );
    }
    mock.stop().await;
}

#[tokio::test]
async fn error_events_are_classified_by_type() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        let request = request(&target, vec![user("hi")]);
        mock.push(MockReply::ErrorEvent {
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        });
        let error = once(&target, &request).await.unwrap_err();
        assert!(
            matches!(&error, ProviderError::Server { status: 529, message } if message.contains("Overloaded")),
            "{case:?}: {error:?}"
        );
        mock.push(MockReply::ErrorEvent {
            kind: "rate_limit_error".into(),
            message: "slow down".into(),
        });
        let error = once(&target, &request).await.unwrap_err();
        assert!(
            matches!(error, ProviderError::RateLimited { .. }),
            "{case:?}: {error:?}"
        );
    }
    mock.stop().await;
}
