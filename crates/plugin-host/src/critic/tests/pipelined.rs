//! The pipelined form: many requests in flight, answered by id in any order, requests that come
//! while others are out going to the same process at once, and tasks opened once per process for
//! the loops that share them.

use super::*;
use crate::{CriticInstance, CriticTask};

/// A critic of the pipelined form answering each request in order (score 1, its task id as rationale),
/// except that on the task named `bad` it does `misbehave` instead.
fn pipelined(misbehave: &str) -> (tempfile::TempDir, ProcessCritic) {
    open_with(
        Form::Pipelined,
        &format!(
            r#"
while True:
    message = read()
    task = message["request"]["task"]["id"]
    if task == "bad":
{misbehave}
    send({{"id": message["id"], "critique": {{"score": 1, "rationale": task}}}})
"#
        ),
        Duration::from_secs(2),
        CRITIC_IN_FLIGHT,
    )
}

#[test]
fn a_pipelined_critic_takes_many_requests_at_once_and_its_answers_land_by_id() {
    // Answers the requests of each batch in reverse order: the ids say which is which.
    let (_dir, critic) = open(
        Form::Pipelined,
        r#"
import select
while True:
    batch = [read()]
    while select.select([sys.stdin], [], [], 0.2)[0]:
        batch.append(read())
    for message in reversed(batch):
        send({"id": message["id"], "critique": {"score": 1, "rationale": message["request"]["task"]["id"]}})
"#,
    );
    assert!(critic.pipelined());
    let tasks = ["a", "b", "c", "d"];
    let answers = call_many(&critic, &tasks);
    for (task, answer) in tasks.iter().zip(answers) {
        assert_eq!(meaning(&answer.unwrap()), json!({"rationale": task, "score": 1}));
    }
}

#[test]
fn a_pipelined_critic_that_fails_on_one_request_in_flight_loses_that_request_only() {
    for (misbehave, expected) in [
        ("        os._exit(3)", "the critic process exited with status 3"),
        ("        print('not json', flush=True)", "the critic wrote a line that is not protocol JSON: not json"),
        ("        time.sleep(600)", "no answer within 2 s"),
        (
            "        send({\"id\": 999, \"critique\": {\"score\": 1}})",
            "the critic wrote a message for request 999, which is not one of the requests waiting",
        ),
        ("        send({\"critique\": {\"score\": 1}})", "the critic wrote a message without an id"),
    ] {
        let (_dir, critic) = pipelined(misbehave);
        let answers = call_many(&critic, &["a", "b", "bad", "c", "d"]);
        for (task, answer) in ["a", "b", "c", "d"].iter().zip(answers.iter().take(2).chain(answers.iter().skip(3))) {
            assert_eq!(answer.as_deref().map(meaning), Ok(json!({"rationale": task, "score": 1})), "{expected}");
        }
        assert_refused(answers[2].clone(), expected);
        // The next requests go to the fresh child as well.
        assert!(call_many(&critic, &["e", "f"]).iter().all(Result::is_ok), "{expected}");
    }
}

/// `batches` of tasks' requests in flight, each asked `after` the one before (while those before
/// wait for their answers), and the answers of each.
fn ask_batches(
    critic: &ProcessCritic,
    batches: &[&[&'static str]],
    after: Duration,
) -> Vec<Vec<Result<String, CallError>>> {
    let mut asked = Vec::new();
    for (at, batch) in batches.iter().enumerate() {
        if at > 0 {
            std::thread::sleep(after);
        }
        // Asked now: queued for the process's driver, which writes them as it takes them.
        for task in *batch {
            let mut future = Box::pin(critic.ask(request(task), None, Some(CallScope::new(task, 0, 0))));
            let first = future.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
            asked.push((future, first));
        }
    }
    let mut answers = join_all(
        asked
            .into_iter()
            .map(|(future, first)| async move {
                match first {
                    std::task::Poll::Ready(answered) => answered,
                    std::task::Poll::Pending => future.await,
                }
            })
            .collect(),
    )
    .into_iter()
    .map(|(answer, _)| answer);
    batches.iter().map(|batch| answers.by_ref().take(batch.len()).collect()).collect()
}

/// A critic of the pipelined form that answers nothing until it has read four requests (or, with
/// `crash`, until no more input came for 2 s), then answers all it read, with its process id.
/// With `crash`, the first process (the one that finds no `crashed` file) answers its first
/// request and exits, leaving in `crashed` how many requests it had read.
fn four_at_once(crash: bool) -> (tempfile::TempDir, ProcessCritic) {
    open(
        Form::Pipelined,
        &format!(
            r#"
crash = {crash} and not os.path.exists("crashed")
pending = b""
def take(patience):
    # The next message, read straight from the pipe (a buffered reader would hide from select
    # what it read ahead); None when nothing more came for `patience` seconds.
    global pending
    while b"\n" not in pending:
        if not select.select([0], [], [], patience)[0]:
            return None
        chunk = os.read(0, 1 << 16)
        if not chunk:
            sys.exit(0)
        pending += chunk
    line, pending = pending.split(b"\n", 1)
    return json.loads(line)
while True:
    batch = [take(None)]
    while len(batch) < 4:
        message = take(2 if {crash} else None)
        if message is None:
            break
        batch.append(message)
    for message in batch:
        send({{"id": message["id"], "critique": {{"score": 1, "rationale": message["request"]["task"]["id"], "pid": os.getpid()}}}})
        if crash:
            open("crashed", "w").write(str(len(batch)))
            sys.exit(3)
"#,
            crash = if crash { "True" } else { "False" }
        ),
    )
}

/// The task and the process id of a critique of `four_at_once`.
fn task_and_pid(answer: &Result<String, CallError>) -> (String, u64) {
    let critique = meaning(answer.as_ref().unwrap_or_else(|e| panic!("{e}")));
    (critique["rationale"].as_str().unwrap().to_string(), critique["pid"].as_u64().unwrap())
}

#[test]
fn requests_asked_while_others_are_out_go_to_the_same_process_at_once() {
    let (_dir, critic) = four_at_once(false);
    // The second two come while the driver waits for the first two's answers: only the nudge
    // makes it write them (the critic answers nothing before it has all four).
    let answered = ask_batches(&critic, &[&["a", "b"], &["c", "d"]], Duration::from_millis(300));
    let answered: Vec<Vec<(String, u64)>> =
        answered.iter().map(|batch| batch.iter().map(task_and_pid).collect()).collect();
    let pid = answered[0][0].1;
    let tasks = |batch: &[(String, u64)]| batch.iter().map(|(task, _)| task.clone()).collect::<Vec<_>>();
    assert_eq!(answered.len(), 2, "{answered:?}");
    assert_eq!(tasks(&answered[0]), ["a", "b"]);
    assert_eq!(tasks(&answered[1]), ["c", "d"]);
    assert!(answered.iter().flatten().all(|&(_, of)| of == pid), "one process: {answered:?}");
}

#[test]
fn a_process_that_dies_with_four_requests_out_costs_the_oldest_request_waiting_only() {
    let (dir, critic) = four_at_once(true);
    let answered = ask_batches(&critic, &[&["a", "b"], &["c", "d"]], Duration::ZERO);
    let read = std::fs::read_to_string(dir.path().join("crashed")).unwrap();
    assert_eq!(read, "4", "all four were out on the process that died");
    assert_eq!(answered.len(), 2);
    let (first, second) = (&answered[0], &answered[1]);
    assert_eq!(first.len(), 2);
    let (task, crashed) = task_and_pid(&first[0]);
    assert_eq!(task, "a");
    let error = first[1].as_ref().expect_err("b was the oldest waiting when the process died");
    assert!(
        matches!(error, CallError::ChildStopped { failure } if failure.contains("exited with status 3")),
        "{error:?}"
    );
    // c and d, out on the process that died, go to a fresh one, not counted as an attempt.
    let second: Vec<(String, u64)> = second.iter().map(task_and_pid).collect();
    assert_eq!(second.iter().map(|(task, _)| task.as_str()).collect::<Vec<_>>(), ["c", "d"]);
    assert!(second.iter().all(|&(_, pid)| pid != crashed), "{second:?}");
}

#[test]
fn a_pipelined_service_call_is_answered_in_the_scope_of_the_request_it_serves() {
    let (_dir, critic) = open(
        Form::Pipelined,
        r#"
while True:
    message = read()
    send({"id": message["id"], "service": "echo", "request": message["request"]["task"]["id"]})
    answer = read()
    while "request" in answer:
        # A request critbench wrote before it read the call: the answer to the call follows.
        answer = read()
    send({"id": message["id"], "critique": {"score": 1, "rationale": answer["answer"]}})
"#,
    );
    // One request at a time here (the critic above reads ahead only to skip requests).
    for task in ["a", "b"] {
        assert_eq!(
            call_many(&critic, &[task])[0].as_deref().map(meaning),
            Ok(json!({"rationale": format!("echo {task}"), "score": 1}))
        );
    }
}

/// A critic of the pipelined form that reads tasks once. It keeps the keys open on its process
/// and answers a round with `"TASK rROUND opens=N closed=[KEYS]"` (N: the opens of that key on
/// this process; KEYS: the keys closed on it so far), or with an error for a key not open on
/// it. On the task named `bad` it does `at_open` when opening it and `at_round` at its rounds;
/// `message` is the line read.
fn by_task(at_open: &str, at_round: &str, in_flight: usize) -> (tempfile::TempDir, ProcessCritic) {
    open_with(
        Form::Pipelined,
        &format!(
            r#"
opened, opens, closed = {{}}, {{}}, []
while True:
    message = read()
    if "close" in message:
        for key in message["close"]:
            closed.append(key)
            del opened[key]
        continue
    if "open" in message and message["task"]["id"] == "bad":
{at_open}
    if "open" in message:
        key = message["open"]
        opened[key] = message["task"]["id"]
        opens[key] = opens.get(key, 0) + 1
        send({{"id": message["id"], "ok": True}})
        continue
    key = message["task_key"]
    if key not in opened:
        send({{"id": message["id"], "error": "key %d is not open here" % key}})
        continue
    task = opened[key]
    if task == "bad":
{at_round}
    rationale = "%s r%d opens=%d closed=%s" % (task, message["request"]["round"], opens[key], sorted(closed))
    send({{"id": message["id"], "critique": {{"score": 1, "rationale": rationale}}}})
"#
        ),
        Duration::from_secs(20),
        in_flight,
    )
}

/// The task `id` as critics see it.
fn task_json(id: &str) -> crate::request::TaskJson {
    crate::request::TaskJson::new(&critbench_core::Task { id: id.into(), prompt: "p".into(), ..Default::default() })
}

/// Round `round` of each loop, all in flight at once; each answer's rationale, or its error.
fn rounds(loops: &mut [CriticTask<'_>], round: u32) -> Vec<Result<String, String>> {
    let mut scopes: Vec<CallScope> = loops.iter().map(|_| CallScope::new("t", 0, round)).collect();
    let asked = loops.iter_mut().zip(scopes.iter_mut()).map(|(task, scope)| task.ask("d", round, scope));
    join_all(asked.collect())
        .into_iter()
        .map(|answer| match answer {
            Ok(text) => {
                let critique: serde_json::Value = serde_json::from_str(&text).unwrap();
                Ok(critique["rationale"].as_str().unwrap_or(&text).to_string())
            }
            Err(error) => Err(error.to_string()),
        })
        .collect()
}

#[test]
fn a_task_is_opened_once_per_process_for_its_loops_and_the_oldest_closed_past_the_requests_in_flight() {
    // Two requests in flight at most: the process keeps the tasks of the requests in flight open,
    // and closes the oldest beyond.
    let (_dir, critic) = by_task("        pass", "        os._exit(3)", 2);
    let instance = CriticInstance::Process(critic);
    let tasks: Vec<_> = ["a", "b", "c", "d", "bad"].iter().map(|id| task_json(id)).collect();
    let ok = |text: &str| Ok(text.to_string());
    // Two loops of `a` (its two arms, say) and one of `b`.
    let mut loops = vec![instance.open_task(&tasks[0]), instance.open_task(&tasks[0]), instance.open_task(&tasks[1])];
    assert_eq!(
        rounds(&mut loops, 0),
        [ok("a r0 opens=1 closed=[]"), ok("a r0 opens=1 closed=[]"), ok("b r0 opens=1 closed=[]")],
        "the loops of `a` share its one open"
    );
    // Asked again, neither is opened again.
    assert_eq!(rounds(&mut loops[1..], 1), [ok("a r1 opens=1 closed=[]"), ok("b r1 opens=1 closed=[]")]);
    // Tasks `c` and `d` come: the process holds more tasks than it has requests in flight, and the
    // oldest, `a` (key 1), is closed; a later round of `a` opens it again under a new key.
    let mut later = vec![instance.open_task(&tasks[2])];
    assert_eq!(rounds(&mut later, 0), [ok("c r0 opens=1 closed=[]")]);
    let mut later = vec![instance.open_task(&tasks[3])];
    assert_eq!(rounds(&mut later, 0), [ok("d r0 opens=1 closed=[]")]);
    assert_eq!(rounds(&mut later, 1), [ok("d r1 opens=1 closed=[1]")]);
    assert_eq!(rounds(&mut loops[..1], 2), [ok("a r2 opens=1 closed=[1]")], "`a` opened again, under key 5");
    // The process crashes on a round: that round fails, and the fresh process, which holds nothing
    // open, is sent the task again before the next round.
    let mut crashing = vec![instance.open_task(&tasks[4]), instance.open_task(&tasks[1])];
    let answers = rounds(&mut crashing, 0);
    assert!(answers[0].as_ref().unwrap_err().contains("the critic process exited with status 3"), "{answers:?}");
    // `b`'s round, behind `bad`'s, went to the fresh process, not counted as an attempt.
    assert_eq!(answers[1], ok("b r0 opens=1 closed=[]"), "opened again on the fresh process");
}

#[test]
fn a_refused_open_costs_its_tasks_rounds_only_and_the_next_round_opens_it_again() {
    let (_dir, critic) = by_task(
        r#"        send({"id": message["id"], "error": "no such task"}); continue"#,
        "        pass",
        CRITIC_IN_FLIGHT,
    );
    let instance = CriticInstance::Process(critic);
    let (a, bad, c) = (task_json("a"), task_json("bad"), task_json("c"));
    let mut loops = [instance.open_task(&a), instance.open_task(&bad), instance.open_task(&c)];
    for round in 0..2 {
        let answers = rounds(&mut loops, round);
        assert_eq!(answers[0], Ok(format!("a r{round} opens=1 closed=[]")));
        // The round written behind the refused open is the critic's to answer: it holds no task,
        // and the next round opens it again (under a new key).
        assert_eq!(answers[1], Err(format!("key {} is not open here", 2 + 2 * round)));
        assert_eq!(answers[2], Ok(format!("c r{round} opens=1 closed=[]")), "the same process goes on");
    }
}

#[test]
fn a_critic_that_breaks_the_pipelined_form_loses_that_round_only() {
    let pass = "        pass";
    let twice = "        send({\"id\": message[\"id\"], \"critique\": {\"score\": 1}})\n        \
                 send({\"id\": message[\"id\"], \"critique\": {\"score\": 2}})\n        continue";
    // The round charged: `bad`'s (2), except that a second answer to `bad`'s round is charged
    // to the message the child works on next (`c`'s open, charged to `c`'s round, 3).
    for (at_open, at_round, expected, charged) in [
        (pass, "        os._exit(3)", "the critic process exited with status 3", 2),
        (pass, "        print('not json', flush=True)", "the critic wrote a line that is not protocol JSON", 2),
        (
            pass,
            "        send({\"id\": 999, \"critique\": {\"score\": 1}})",
            "the critic wrote a message for request 999, which is not one of the requests waiting",
            2,
        ),
        (pass, twice, "which is not one of the requests waiting", 3),
        (pass, "        send({\"id\": message[\"id\"], \"ok\": True}); continue", "the critic answered request", 2),
        (
            "        send({\"id\": message[\"id\"], \"critique\": {\"score\": 1}}); continue",
            pass,
            "the critic answered the open of a task",
            2,
        ),
    ] {
        let (_dir, critic) = by_task(at_open, at_round, CRITIC_IN_FLIGHT);
        let instance = CriticInstance::Process(critic);
        let tasks: Vec<_> = ["a", "b", "bad", "c", "d"].iter().map(|id| task_json(id)).collect();
        let mut loops: Vec<CriticTask<'_>> = tasks.iter().map(|task| instance.open_task(task)).collect();
        let answers = rounds(&mut loops, 0);
        let error = answers[charged].as_ref().expect_err(expected);
        assert!(error.contains(expected), "{expected}: {error}");
        assert!(error.ends_with("the critic process was stopped and will be restarted"), "{error}");
        for (at, task) in [(0, "a"), (1, "b"), (3, "c"), (4, "d")].into_iter().filter(|&(at, _)| at != charged) {
            assert!(
                answers[at].as_ref().is_ok_and(|text| text.starts_with(&format!("{task} r0"))),
                "{expected}: {answers:?}"
            );
        }
        loops.remove(2);
        let next = rounds(&mut loops, 1);
        assert!(next.iter().all(Result::is_ok), "{expected}: {next:?}");
    }
}
