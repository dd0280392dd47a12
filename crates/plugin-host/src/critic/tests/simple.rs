//! The simple form: one request at a time, each answer landing on its own request by its id.

use super::*;

#[test]
fn an_answer_to_an_earlier_request_is_refused_while_the_next_one_waits() {
    // Answers request 1, then — once request 2 is in its pipe — answers request 1 again.
    // (Had the stray line come in one read with the answer to 2, both would be refused as
    // one write of two messages.)
    let (_dir, critic) = open(
        Form::Simple,
        r#"
first = read()
send({"id": first["id"], "critique": {"score": 1, "rationale": first["request"]["task"]["id"]}})
wait_for_input()
send({"id": first["id"], "critique": {"score": 9, "rationale": "stray"}})
# Alone in the pipe, not in one read with the next answer.
time.sleep(0.5)
while True:
    message = read()
    send({"id": message["id"], "critique": {"score": 2, "rationale": message["request"]["task"]["id"]}})
"#,
    );
    assert_eq!(meaning(&critic.call(&request("a"), None).unwrap()), json!({"rationale": "a", "score": 1}));
    assert_refused(critic.call(&request("b"), None), "for request 1 while critbench waited for request 2");
    // A fresh child, numbering afresh, answers its first request.
    assert_eq!(meaning(&critic.call(&request("c"), None).unwrap()), json!({"rationale": "c", "score": 1}));
}

#[test]
fn a_second_answer_between_requests_is_refused_at_the_next() {
    let (_dir, critic) = open(
        Form::Simple,
        r#"
first = read()
send({"id": first["id"], "critique": {"score": 1}})
time.sleep(0.2)
send({"id": first["id"], "critique": {"score": 9}})
while True:
    message = read()
    send({"id": message["id"], "critique": {"score": 2}})
"#,
    );
    assert_eq!(meaning(&critic.call(&request("a"), None).unwrap()), json!({"score": 1}));
    std::thread::sleep(Duration::from_secs(1));
    assert_refused(critic.call(&request("b"), None), "the critic wrote a line after its last answer, unasked");
}

#[test]
fn a_message_with_a_wrong_or_no_id_is_refused() {
    for (reply, expected) in [
        (r#"{"id": 5, "critique": {"score": 1}}"#, "for request 5 while critbench waited for request 1"),
        (r#"{"critique": {"score": 1}}"#, "without an id"),
        (r#"{"id": 5, "service": "echo", "request": "hi"}"#, "for request 5 while critbench waited for request 1"),
    ] {
        let (_dir, critic) = open(Form::Simple, &format!("read()\nsend({reply})\nread()\n"));
        assert_refused(critic.call(&request("a"), None), expected);
    }
}

#[test]
fn a_service_call_carries_its_request_id_and_so_does_its_answer() {
    let (_dir, critic) = open(
        Form::Simple,
        r#"
while True:
    message = read()
    send({"id": message["id"], "service": "echo", "request": "hi"})
    answer = read()
    ok = answer["id"] == message["id"]
    send({"id": message["id"], "critique": {"score": 5, "rationale": answer["answer"] if ok else "wrong id"}})
"#,
    );
    for task in ["a", "b", "c"] {
        assert_eq!(meaning(&critic.call(&request(task), None).unwrap()), json!({"rationale": "echo hi", "score": 5}));
    }
}
