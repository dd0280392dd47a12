//! A critic with a loop's task open (`CriticInstance::open_task`): a built-in with task functions
//! reads the task once and answers each round as the whole request would be answered.

use critbench_core::Task;
use critbench_plugin_host::request::{TaskJson, critique_request};
use critbench_plugin_host::services::CallScope;
use critbench_plugin_host::{PluginLibrary, SearchPath, block_on, critique_task_with_retry};

fn scripted() -> critbench_plugin_host::CriticInstance {
    let library = PluginLibrary::resolve("scripted", &SearchPath::default_for_current_exe(&[]), None).unwrap();
    assert!(library.reads_tasks(), "the scripted critic reads a task once per loop");
    library.instantiate("{}").unwrap()
}

#[test]
fn a_task_opened_once_answers_each_round_as_the_whole_request_does() {
    let critic = scripted();
    let task = Task {
        id: "t1".into(),
        prompt: "p".into(),
        critiques: Some(critbench_core::JsonText::from_value(
            &serde_json::json!([{"score": 3}, {"score": 9, "issues": []}]),
        )),
        ..Task::default()
    };
    let json = TaskJson::new(&task);
    let mut open = critic.open_task(&json);
    assert!(open.reads_task_once());
    for round in 0..4 {
        let mut scope = CallScope::new("t1", 0, round);
        let by_task = block_on(open.ask("a draft", round, &mut scope)).unwrap();
        assert_eq!(by_task, critic.call(&critique_request(&json, "a draft", round)).unwrap(), "round {round}");
    }
}

#[test]
fn a_task_the_critic_cannot_open_fails_every_attempt_with_its_message() {
    let critic = scripted();
    let json = TaskJson::new(&Task { id: "bare".into(), prompt: "p".into(), ..Task::default() });
    let mut open = critic.open_task(&json);
    let mut scope = CallScope::new("bare", 0, 0);
    let call = block_on(critique_task_with_retry(&mut open, "d", 0, None, 3, &mut scope));
    assert_eq!((call.attempts, scope.attempt), (3, 3));
    assert_eq!(call.error.as_deref(), Some("task \"bare\" has no `critiques` for the scripted critic"));
    assert_eq!(call.critique.score, 0.0, "the conservative stand-in");
}
