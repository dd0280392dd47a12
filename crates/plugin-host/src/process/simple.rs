//! One request at a time to a critic's child: the simple form of the protocol, and the whole
//! requests a child of the pipelined form is sent alone ([`ProcessCritic::call`]).

use std::time::Instant;

use super::{Answer, Child, ProcessCritic, written_critique};
use crate::program::{Broken, excerpt, parse_message};
use crate::protocol::{self, ProtocolError, Reply};
use crate::services::CallScope;

impl ProcessCritic {
    /// One request and its answer, serving the child's host-service calls in between. An `Err`
    /// means the child is no longer usable.
    pub(super) fn exchange(
        &self,
        child: &mut Child,
        request: &str,
        mut scope: Option<&mut CallScope>,
    ) -> Result<Answer, Broken> {
        child.program.refuse_unasked()?;
        let id = child.next_id;
        child.next_id += 1;
        let mut asked = Instant::now();
        let mut pass = scope.as_deref().and_then(|scope| self.model_pass(scope));
        let line = match &pass {
            Some(pass) => protocol::with_model(protocol::request_line(id, request), pass.model()),
            None => protocol::request_line(id, request),
        };
        child.program.send(&line).map_err(|source| Broken::Send { what: "the request", source })?;
        // The key ends with the exchange, however it ends; its calls count once answered.
        let mut settle = |scope: Option<&mut CallScope>| {
            if let (Some(pass), Some(scope)) = (pass.take(), scope) {
                super::add_use(scope, pass.close());
            }
        };
        let mut deadline = Instant::now() + self.timeout;
        loop {
            let (message, line) = self.answer_to(child, asked, deadline)?;
            match protocol::reply(&message, id)? {
                Reply::Service { name, request } => {
                    let answer = self.host.dispatch(&name, &request, scope.as_deref_mut());
                    asked = Instant::now();
                    child.program.send(&protocol::service_answer_line(id, answer)).map_err(Broken::AnswerService)?;
                    // The timeout measures the critic, not the host's services.
                    deadline = Instant::now() + self.timeout;
                }
                Reply::Critique(text) => {
                    settle(scope);
                    return Ok(Answer::Critique(written_critique(&line).unwrap_or(text)));
                }
                Reply::Error(message) => {
                    settle(scope);
                    return Ok(Answer::Error(message));
                }
                // `reply` reads only requests' answers; an `ok` is not one.
                Reply::Opened => {
                    let message = excerpt(&message.to_string());
                    return Err(ProtocolError::WrongAnswer { what: "request", id, wrong: "`ok`", message }.into());
                }
            }
        }
    }

    /// The child's next message, which must answer what critbench sent at `asked`: a line that
    /// arrived before then answers nothing.
    fn answer_to(
        &self,
        child: &Child,
        asked: Instant,
        deadline: Instant,
    ) -> Result<(serde_json::Value, Vec<u8>), Broken> {
        let (line, arrived) = child.program.next_line(deadline, self.timeout)?;
        if arrived < asked {
            return Err(Broken::unasked(&line));
        }
        Ok((parse_message(&line)?, line))
    }
}
