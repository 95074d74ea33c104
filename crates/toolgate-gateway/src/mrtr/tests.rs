//! Tests of input_required rounds: parking, resuming, asking again, refusing states.

use super::*;
use serde_json::json;

/// A client link that nobody should ask directly: rounds go through the round link.
struct Client;

impl RequestLink for Client {
    fn capabilities(&self) -> mcp::ClientCapabilities {
        mcp::ClientCapabilities::default()
    }

    fn notify(&self, _: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn ask(&self, _: mcp::ServerRequest) -> Answer {
        panic!("a 2026-07-28 client is never asked directly")
    }
}

fn client() -> Arc<dyn RequestLink> {
    Arc::new(Client)
}

fn elicitation(message: &str) -> mcp::InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message,
                   "requestedSchema": {"type": "object", "properties": {}}}
    }))
    .expect("an elicitation request")
}

fn done(text: &str) -> Served {
    Ok(Reply::Result(mcp::ServerResult::CallToolResult(mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text(text),
    ]))))
}

fn fresh(target: &str) -> Retry {
    Retry { target: target.to_owned(), state: None, responses: None }
}

fn retry(target: &str, state: &str, responses: serde_json::Value) -> Retry {
    Retry {
        target: target.to_owned(),
        state: Some(state.to_owned()),
        responses: Some(serde_json::from_value(responses).expect("responses")),
    }
}

/// The questions and state of an `input_required` result.
fn round_of(served: Served) -> (Vec<String>, String) {
    match served.expect("served") {
        Reply::Result(mcp::ServerResult::InputRequiredResult(result)) => (
            result.input_requests.expect("questions").into_keys().collect(),
            result.request_state.expect("a state"),
        ),
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn text_of(served: Served) -> String {
    match served.expect("served") {
        Reply::Result(mcp::ServerResult::CallToolResult(result)) => {
            result.content[0].as_text().expect("text").text.clone()
        }
        other => panic!("expected a tool result, got {other:?}"),
    }
}

/// A call that asks `rounds` rounds (two questions in the first) and says what it was told.
fn asking(rounds: usize) -> impl FnOnce(Arc<dyn RequestLink>) -> BoxFuture<'static, Served> {
    move |link| {
        Box::pin(async move {
            let mut heard = Vec::new();
            for round in 0..rounds {
                let mut asked = mcp::InputRequests::new();
                asked.insert(format!("q{round}"), elicitation("first"));
                if round == 0 {
                    asked.insert("extra".to_owned(), elicitation("second"));
                }
                let answers = match link.input_round(asked).await {
                    Ok(answers) => answers,
                    Err(refused) => return Err(refused.error),
                };
                heard.extend(answers.into_iter().map(|(key, value)| format!("{key}={value}")));
            }
            done(&heard.join(" "))
        })
    }
}

#[tokio::test]
async fn a_call_that_asks_nothing_is_answered_at_once() {
    let rounds = Rounds::default();
    let served = rounds
        .serve(fresh("tools/call t"), client(), CancellationToken::new(), |_| {
            Box::pin(async { done("plain") })
        })
        .await;
    assert_eq!(text_of(served), "plain");
    assert!(rounds.parked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_round_is_answered_by_the_retry_and_each_round_has_its_own_state() {
    let rounds = Rounds::default();
    let target = "tools/call t";
    let first = rounds.serve(fresh(target), client(), CancellationToken::new(), asking(2)).await;
    let (questions, state) = round_of(first);
    assert_eq!(questions, ["extra", "q0"], "both questions of the round at once");

    let answers = json!({"q0": {"action": "accept"}, "extra": {"action": "decline"}});
    let second = rounds
        .serve(retry(target, &state, answers), client(), CancellationToken::new(), |_| {
            unreachable!("a retry resumes the parked call")
        })
        .await;
    let (questions, next_state) = round_of(second);
    assert_eq!(questions, ["q1"]);
    assert_ne!(next_state, state, "a new round, a new state");

    let again = rounds
        .serve(
            retry(target, &state, json!({})),
            client(),
            CancellationToken::new(),
            |_| unreachable!(),
        )
        .await;
    assert!(again.unwrap_err().message.contains("requestState rejected"), "a state is used once");

    let last = rounds
        .serve(
            retry(target, &next_state, json!({"q1": {"action": "cancel"}})),
            client(),
            CancellationToken::new(),
            |_| unreachable!(),
        )
        .await;
    let heard = text_of(last);
    assert!(heard.contains("q0=") && heard.contains("extra=") && heard.contains("q1="), "{heard}");
    assert!(rounds.parked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn missing_answers_are_asked_again_and_given_ones_kept() {
    let rounds = Rounds::default();
    let target = "prompts/get p";
    let (_, state) =
        round_of(rounds.serve(fresh(target), client(), CancellationToken::new(), asking(1)).await);
    let partial = json!({"q0": {"action": "accept"}, "wrong_key": {"action": "accept"}});
    let asked_again = rounds
        .serve(
            retry(target, &state, partial),
            client(),
            CancellationToken::new(),
            |_| unreachable!(),
        )
        .await;
    let (questions, state) = round_of(asked_again);
    assert_eq!(questions, ["extra"], "only what is still open");
    let rest = json!({"extra": {"action": "decline"}});
    let heard = text_of(
        rounds
            .serve(
                retry(target, &state, rest),
                client(),
                CancellationToken::new(),
                |_| unreachable!(),
            )
            .await,
    );
    assert!(heard.contains("q0=") && heard.contains("extra="), "{heard}");
}

#[tokio::test]
async fn a_changed_state_or_one_of_another_request_is_refused() {
    let rounds = Rounds::default();
    let (_, state) = round_of(
        rounds.serve(fresh("tools/call t"), client(), CancellationToken::new(), asking(1)).await,
    );
    for (target, state) in [
        ("tools/call t", format!("{state}-TAMPERED")),
        ("tools/call other", state.clone()),
        ("tools/call t", "made-up".to_owned()),
    ] {
        let refused = rounds
            .serve(
                retry(target, &state, json!({})),
                client(),
                CancellationToken::new(),
                |_| unreachable!(),
            )
            .await
            .unwrap_err();
        assert_eq!(refused.code, mcp::ErrorCode::INVALID_PARAMS, "{target} {state}");
    }
    assert_eq!(rounds.parked.lock().unwrap().len(), 1, "the real one still waits");
}

#[tokio::test(start_paused = true)]
async fn a_call_waits_so_long_and_is_cancelled_when_it_expires() {
    let rounds = Rounds::default();
    let cancel = CancellationToken::new();
    let (_, state) =
        round_of(rounds.serve(fresh("tools/call t"), client(), cancel.clone(), asking(1)).await);
    tokio::time::advance(PARKED_FOR + Duration::from_secs(1)).await;
    let refused = rounds
        .serve(
            retry("tools/call t", &state, json!({})),
            client(),
            CancellationToken::new(),
            |_| unreachable!(),
        )
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("expired") || refused.message.contains("not one"),
        "{refused:?}"
    );
    assert!(cancel.is_cancelled(), "the waiting call is cancelled, upstream too");
}

#[tokio::test]
async fn a_client_that_goes_away_during_a_retry_cancels_the_call() {
    let rounds = Arc::new(Rounds::default());
    let call_cancel = CancellationToken::new();
    // The call asks once, then waits for ever (a slow upstream).
    let (_, state) = round_of(
        rounds
            .serve(fresh("tools/call t"), client(), call_cancel.clone(), |link| {
                Box::pin(async move {
                    let mut asked = mcp::InputRequests::new();
                    asked.insert("q".to_owned(), elicitation("x"));
                    let _ = link.input_round(asked).await;
                    std::future::pending::<Served>().await
                })
            })
            .await,
    );
    let gone = CancellationToken::new();
    let waiting = {
        let (rounds, gone) = (rounds.clone(), gone.clone());
        tokio::spawn(async move {
            rounds
                .serve(
                    retry("tools/call t", &state, json!({"q": {}})),
                    client(),
                    gone,
                    |_| unreachable!(),
                )
                .await
        })
    };
    gone.cancel();
    assert!(waiting.await.unwrap().is_err());
    assert!(call_cancel.is_cancelled());
}

#[tokio::test]
async fn a_single_question_becomes_a_round_and_its_answer_a_result() {
    let rounds = Rounds::default();
    let (questions, state) = round_of(
        rounds
            .serve(fresh("resources/read test://r"), client(), CancellationToken::new(), |link| {
                Box::pin(async move {
                    let request =
                        mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default());
                    match link.ask(request).await {
                        Ok(mcp::ClientResult::ListRootsResult(roots)) => {
                            done(&format!("{} roots", roots.roots.len()))
                        }
                        other => done(&format!("unexpected {other:?}")),
                    }
                })
            })
            .await,
    );
    assert_eq!(questions, ["roots"]);
    let answer = json!({"roots": {"roots": [{"uri": "file:///a"}]}});
    let served = rounds
        .serve(
            retry("resources/read test://r", &state, answer),
            client(),
            CancellationToken::new(),
            |_| unreachable!(),
        )
        .await;
    assert_eq!(text_of(served), "1 roots");
}

fn sampling(text: &str) -> mcp::ServerRequest {
    mcp::ServerRequest::CreateMessageRequest(mcp::CreateMessageRequest::new(
        mcp::CreateMessageRequestParams::new(vec![mcp::SamplingMessage::user_text(text)], 10),
    ))
}

fn elicit(message: &str) -> mcp::ServerRequest {
    let mcp::InputRequest::Elicitation(request) = elicitation(message) else {
        unreachable!("an elicitation")
    };
    mcp::ServerRequest::ElicitRequest(request)
}

/// What a client answered to one question, in a word.
fn said(answer: Result<mcp::ClientResult, mcp::ErrorData>) -> String {
    match answer {
        Ok(mcp::ClientResult::ElicitResult(result)) => format!("{:?}", result.action),
        Ok(mcp::ClientResult::CreateMessageResult(result)) => result.model,
        Ok(mcp::ClientResult::ListRootsResult(result)) => format!("{} roots", result.roots.len()),
        Ok(other) => format!("{other:?}"),
        Err(error) => format!("refused: {}", error.message),
    }
}

/// A handshake-era upstream asks its questions one request each, all at once (as the SDKs'
/// shims send a round): the client gets them as one round, under keys saying what each asks,
/// and each question its own answer.
#[tokio::test]
async fn questions_asked_at_once_are_one_round_and_each_gets_its_own_answer() {
    let rounds = Rounds::default();
    let target = "tools/call t";
    let first = rounds
        .serve(fresh(target), client(), CancellationToken::new(), |link| {
            Box::pin(async move {
                let roots = mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default());
                let answers = futures::future::join_all([
                    link.ask(elicit("name?")),
                    link.ask(sampling("greet")),
                    link.ask(roots),
                    link.ask(elicit("colour?")),
                ])
                .await;
                done(&answers.into_iter().map(said).collect::<Vec<_>>().join(", "))
            })
        })
        .await;
    let (questions, state) = round_of(first);
    assert_eq!(questions, ["elicitation", "elicitation-2", "roots", "sampling"]);
    let answers = json!({
        "elicitation": {"action": "accept", "content": {"name": "Ada"}},
        "elicitation-2": {"action": "decline"},
        "sampling": {"role": "assistant", "content": {"type": "text", "text": "hi"},
                     "model": "m1"},
        "roots": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]},
    });
    let served = rounds
        .serve(retry(target, &state, answers), client(), CancellationToken::new(), |_| {
            unreachable!("a retry resumes the parked call")
        })
        .await;
    assert_eq!(text_of(served), "Accept, m1, 2 roots, Decline");
}

/// Between the round and its retry the call holds for its client: on stdio, a question that
/// arrives meanwhile is not taken to be its (`toolgate_upstream::Caller::holding`).
#[tokio::test]
async fn a_parked_call_holds_until_its_answers_come() {
    let rounds = Rounds::default();
    let target = "tools/call t";
    let seen: Arc<Mutex<Option<Arc<dyn RequestLink>>>> = Arc::default();
    let keep = seen.clone();
    let (_, state) = round_of(
        rounds
            .serve(fresh(target), client(), CancellationToken::new(), move |link| {
                *keep.lock().unwrap() = Some(link.clone());
                Box::pin(async move {
                    let before = link.holding();
                    let answer = said(link.ask(elicit("go on?")).await);
                    done(&format!("{before} {answer} {}", link.holding()))
                })
            })
            .await,
    );
    let link = seen.lock().unwrap().clone().expect("the call's link");
    assert!(link.holding(), "parked, its question with the client");
    let served = rounds
        .serve(
            retry(target, &state, json!({"elicitation": {"action": "accept"}})),
            client(),
            CancellationToken::new(),
            |_| unreachable!(),
        )
        .await;
    assert_eq!(text_of(served), "false Accept false", "working before and after");
    assert!(!link.holding());
}

/// A question its client did not declare it can answer is refused to the upstream; when it is
/// all the call asks, the client is told what its request needs (-32021, as a 2026-07-28
/// server answers) and the call ends, upstream too.
#[tokio::test]
async fn a_call_asking_only_what_its_client_cannot_answer_is_refused_for_the_capability() {
    let rounds = Rounds::default();
    let cancel = CancellationToken::new();
    let (tell, mut told) = mpsc::unbounded_channel();
    let refused = rounds
        .serve(fresh("tools/call t"), client(), cancel.clone(), move |link| {
            Box::pin(async move {
                let error = link
                    .refuse("sampling.tools", mcp::ErrorData::invalid_request("no tools", None))
                    .await;
                let _ = tell.send(error.message.into_owned());
                std::future::pending::<Served>().await
            })
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code, mcp::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(refused.data, Some(json!({"requiredCapabilities": {"sampling": {"tools": {}}}})));
    assert!(refused.message.contains("sampling.tools capability"), "{}", refused.message);
    assert!(cancel.is_cancelled(), "the call ends, upstream too");
    assert_eq!(told.recv().await.as_deref(), Some("no tools"), "the upstream was told");
    assert!(rounds.parked.lock().unwrap().is_empty());
}

/// With questions its client can answer asked at the same time, the others are refused to the
/// upstream and the client is asked the rest.
#[tokio::test]
async fn what_the_client_cannot_answer_is_refused_and_the_rest_asked() {
    let rounds = Rounds::default();
    let target = "tools/call t";
    let first = rounds
        .serve(fresh(target), client(), CancellationToken::new(), |link| {
            Box::pin(async move {
                let refused =
                    link.refuse("elicitation", mcp::ErrorData::invalid_request("no", None));
                let (refused, sampled) = tokio::join!(refused, link.ask(sampling("greet")));
                done(&format!("{} / {}", refused.message, said(sampled)))
            })
        })
        .await;
    let (questions, state) = round_of(first);
    assert_eq!(questions, ["sampling"]);
    let answer = json!({"sampling": {"role": "assistant",
                                     "content": {"type": "text", "text": "hi"}, "model": "m"}});
    let served = rounds
        .serve(
            retry(target, &state, answer),
            client(),
            CancellationToken::new(),
            |_| unreachable!(),
        )
        .await;
    assert_eq!(text_of(served), "no / m");
}
