//! The openai author's prompts, as the model server receives them: the task, its evidence and the
//! memory hints go to the generator; the reviser sees sanitized feedback or none; model text comes
//! back cleaned, with token counts; failures name the round.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use critbench_core::author::{Author, AuthorError, Draft, DraftKey, Hint};
use critbench_core::{Critique, ScoreRange, Suggestion, Task};

use crate::author::OpenAiAuthor;
use crate::mock_server::{MockResponse, MockServer};
use crate::prompts::Prompts;
use crate::{CacheMode, Client, ClientSettings, EndpointSettings, Failover, Role, RoleSettings};

fn client(server: &MockServer, roles: &[(Role, &str)]) -> Arc<Client> {
    let roles: BTreeMap<Role, RoleSettings> =
        roles.iter().map(|(role, model)| (*role, RoleSettings::new(*model, 0.5, None, 1))).collect();
    Arc::new(
        Client::new(ClientSettings {
            endpoints: vec![EndpointSettings::new(server.base_url(), 2)],
            roles,
            timeout: Duration::from_secs(5),
            max_retries: 1,
            retry_base: Duration::from_millis(1),
            max_tokens_total: None,
            cache: CacheMode::Memory,
            failover: Failover::default(),
            currency: None,
            track_tasks: false,
        })
        .unwrap(),
    )
}

fn task() -> Task {
    Task {
        id: "rag-1".into(),
        prompt: "How do bees find flowers?".into(),
        evidence: BTreeMap::from([("d1".into(), "Bees dance to point at flowers.".into())]),
        ..Task::default()
    }
}

fn key(round: u32) -> DraftKey<'static> {
    DraftKey { seed: 1, task_id: "rag-1", epoch: 0, round }
}

#[test]
fn prompts_carry_the_task_hints_and_sanitized_feedback() {
    let server = MockServer::start(|request| {
        MockResponse::chat(
            &format!("Sure, here is the answer:\n\nBees dance [d1]. ({})\n\nI hope this helps!", request.model()),
            11,
            4,
        )
    });
    let author =
        OpenAiAuthor::new(client(&server, &[(Role::Generator, "gen"), (Role::Reviser, "rev")]), Prompts::default());
    let hints = [Hint { issue_type: "missing_evidence".into(), text: "List the evidence first, then answer.".into() }];
    let draft = author.generate(&task(), &hints, &key(0)).unwrap();
    assert_eq!(draft.text, "Bees dance [d1]. (gen)", "chatty wrappers are stripped");
    assert_eq!((draft.tokens_in, draft.tokens_out), (Some(11), Some(4)));

    let mut critique = Critique::unavailable(ScoreRange { min: 0.0, max: 10.0 });
    critique.issues = vec!["../../../../../../".into(), "The answer never says what the dance encodes.".into()];
    critique.suggestions =
        vec![Suggestion { dimension: None, target: None, edit: "edit edit edit edit edit edit".into() }];
    author.revise(&task(), &draft, Some(&critique), &key(1)).unwrap();
    author.revise(&task(), &draft, None, &key(1)).unwrap();

    let received = server.received();
    let user = |index: usize| received[index].body["messages"][1]["content"].as_str().unwrap().to_string();
    let generate = user(0);
    assert!(generate.starts_with("Task:\nHow do bees find flowers?\n\n"), "{generate}");
    assert!(generate.contains("[d1] Bees dance to point at flowers."), "{generate}");
    assert!(generate.contains("- List the evidence first, then answer."), "{generate}");
    let (with, blind): (Vec<String>, Vec<String>) = (1..3).map(user).partition(|m| m.contains("A reviewer found"));
    let (with, blind) = (&with[0], &blind[0]);
    assert!(
        with.contains("Draft:\nBees dance [d1]. (gen)")
            && with.contains("- The answer never says what the dance encodes.")
    );
    assert!(!with.contains("../") && !with.contains("edit edit") && !with.contains("critique unavailable"), "{with}");
    assert!(blind.contains("Improve this draft") && !blind.contains("dance encodes"), "{blind}");
    let models: BTreeSet<&str> = received.iter().map(|r| r.model()).collect();
    assert_eq!(models, BTreeSet::from(["gen", "rev"]));

    // Without an adjudicator model there is no adjudication.
    assert!(author.adjudicate(&task(), "x", None, &key(2)).is_none());
}

#[test]
fn the_adjudicator_gets_the_last_concerns_and_failures_name_the_round() {
    let server = MockServer::start(|request| {
        if request.model() == "broken" {
            MockResponse::error(500, "down")
        } else {
            MockResponse::chat("Final text.", 3, 2)
        }
    });
    let author = OpenAiAuthor::new(
        client(&server, &[(Role::Generator, "gen"), (Role::Reviser, "broken"), (Role::Adjudicator, "adj")]),
        Prompts::default(),
    );
    let mut critique = Critique::unavailable(ScoreRange { min: 0.0, max: 10.0 });
    critique.issues = vec!["Two sentences contradict each other.".into()];
    let final_text = author.adjudicate(&task(), "Draft.", Some(&critique), &key(3)).unwrap().unwrap();
    assert_eq!(final_text.text, "Final text.");
    let asked = server.received()[0].body["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(asked.contains("Latest draft:\nDraft.") && asked.contains("Two sentences contradict"), "{asked}");
    let error = author.revise(&task(), &Draft::offline("Draft.".into()), None, &key(2)).unwrap_err();
    assert!(
        matches!(error, AuthorError::Model { round: 2, step: "revise", .. }),
        "the failure names its round and step, and keeps the client's error: {error:?}"
    );
    let chat_error = std::error::Error::source(&error).unwrap().to_string();
    assert!(chat_error.starts_with("reviser call failed after 2 attempt(s): HTTP 500"), "{chat_error}");
    let error = error.to_string();
    assert!(error.starts_with("round 2 (revise): reviser call failed after 2 attempt(s): HTTP 500"), "{error}");
}
