//! A child program's lifecycle: how to start it ([`Launch`]), the running program ([`Program`]:
//! spawned as the leader of a process group that dies with critbench, its stdin written without
//! blocking, its stdout read by a thread of its own), and its end, killed with its whole group and
//! told in words.

use std::ffi::OsString;
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};

use super::lines::{Delivery, Line, Lines, Nudge, read_lines};
use super::{Broken, parse_message, process_group};
use crate::protocol::Role;

/// Why a program did not start ([`Program::spawn`], [`Program::start`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// The process could not be spawned (`label`: how it is named, its command line or library).
    #[error("cannot start `{label}`: {source}")]
    Spawn { label: String, source: std::io::Error },
    /// The thread that reads its output did not start; the process was stopped.
    #[error("cannot start a reader thread: {0}")]
    ReaderThread(std::io::Error),
    /// It broke before its hello came and was stopped: what [`Program::finish`] says of it.
    #[error("{0}")]
    Stopped(String),
    /// Its hello was `{"error": ...}`: it refuses to start, in its own words.
    #[error("{0}")]
    Refused(String),
}

/// How often a program that is silent, or does not read, is checked for having died.
const EXIT_CHECK: Duration = Duration::from_millis(100);

/// How to start a program.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// How the program is named in messages: its command line or library path.
    pub label: String,
    /// What the program is to critbench: its messages' noun ("the critic wrote …") and keys.
    pub role: Role,
    /// The variables of critbench's environment the program is given, those set ([`BASE_ENV`]
    /// and the ones the experiment names); `None`: all of them.
    pub env: Option<Vec<String>>,
}

/// The variables of critbench's environment every program a run starts is given, when set: what
/// a program needs to run. Any other is given only when the experiment names it (`env`).
pub const BASE_ENV: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];

/// A running program: its process, the write end of its stdin and the lines of its stdout.
/// The least time a program gets to say hello: starting an interpreter or loading a library can
/// be slow on a busy machine.
pub(crate) const MIN_STARTUP: Duration = Duration::from_secs(30);

pub(crate) struct Program {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: Lines,
    /// Raised once the program may write several messages in one write ([`Program::let_several_come`]).
    several: Arc<AtomicBool>,
    /// What a [`Nudge`] for this program sends through.
    nudge: Sender<Delivery>,
    role: &'static str,
}

impl Program {
    /// Starts `launch` as the leader of a process group of its own that dies with critbench (with
    /// an address space of at most `memory_mb` MiB), and its reader thread.
    pub(crate) fn spawn(launch: &Launch, memory_mb: Option<u64>) -> Result<Program, StartError> {
        let mut command = Command::new(&launch.program);
        command.args(&launch.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        if let Some(cwd) = &launch.cwd {
            command.current_dir(cwd);
        }
        if let Some(names) = &launch.env {
            command.env_clear();
            for name in names {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        let mut process = process_group::spawn(command, memory_mb)
            .map_err(|source| StartError::Spawn { label: launch.label.clone(), source })?;
        let stdout = process.stdout.take().expect("stdout is piped");
        let stdin = process.stdin.take();
        if let Some(stdin) = &stdin {
            // Writes wait in `write_by`, which gives up at a deadline, never in the kernel.
            // SAFETY: F_GETFL/F_SETFL on a descriptor the ChildStdin owns.
            unsafe {
                let flags = libc::fcntl(stdin.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(stdin.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
        }
        let (sender, lines) = channel();
        let nudge = sender.clone();
        let several = Arc::new(AtomicBool::new(false));
        let reading = Arc::clone(&several);
        let reader = std::thread::Builder::new()
            .name(format!("critbench-{}-reader", launch.role.name))
            .spawn(move || read_lines(stdout, sender, &reading));
        let program = Program { process, stdin, lines: Lines::new(lines), several, nudge, role: launch.role.name };
        match reader {
            Ok(_) => Ok(program),
            Err(e) => {
                program.finish(None);
                Err(StartError::ReaderThread(e))
            }
        }
    }

    /// From now on the program may write several messages in one write (it answers requests in
    /// flight as it goes); until then, bytes after a message in the same write are refused.
    pub(crate) fn let_several_come(&self) {
        self.several.store(true, Ordering::Relaxed);
    }

    /// What wakes a thread waiting for this program's lines ([`Program::next_line_or_nudge`]).
    pub(crate) fn nudge(&self) -> Nudge {
        Nudge(self.nudge.clone())
    }

    /// Writes `line` and its newline, for as long as it takes.
    pub(crate) fn send(&mut self, line: &str) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.write_within(&bytes, None)
    }

    /// Writes all of `bytes` to the program's stdin (non-blocking), waiting for room in the pipe
    /// for as long as it takes, or with `stall` until no byte could go out for that long
    /// (`ErrorKind::TimedOut`: the program stopped reading). A program working through a long
    /// batch reads as it goes, so only one that stopped reading is timed out.
    pub(crate) fn write_within(&mut self, mut bytes: &[u8], stall: Option<Duration>) -> std::io::Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(std::io::Error::other("stdin is closed"));
        };
        let mut progress = Instant::now();
        while !bytes.is_empty() {
            match stdin.write(bytes) {
                Ok(0) => return Err(std::io::Error::from(ErrorKind::WriteZero)),
                Ok(n) => {
                    bytes = &bytes[n..];
                    progress = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    let wait = match stall {
                        Some(stall) => {
                            let left = (progress + stall).saturating_duration_since(Instant::now());
                            if left.is_zero() {
                                let stopped = format!("the {} stopped reading its input", self.role);
                                return Err(std::io::Error::new(ErrorKind::TimedOut, stopped));
                            }
                            left.min(EXIT_CHECK)
                        }
                        None => EXIT_CHECK,
                    };
                    let mut ready = libc::pollfd { fd: stdin.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                    // SAFETY: one valid pollfd; a failed or interrupted poll just loops.
                    unsafe { libc::poll(&mut ready, 1, wait.as_millis().max(1) as libc::c_int) };
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A line the program wrote that is here already, if any (or why reading stopped).
    pub(crate) fn line_waiting(&self) -> Option<Result<Vec<u8>, Broken>> {
        match self.lines.try_recv() {
            Ok(Line { bytes, .. }) => Some(bytes),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => None,
        }
    }

    /// Refuses a line the program wrote since its last answer: it answers nothing, and read after
    /// the next request is sent it would be taken for that request's answer.
    pub(crate) fn refuse_unasked(&self) -> Result<(), Broken> {
        match self.line_waiting() {
            Some(Ok(line)) => Err(Broken::unasked(&line)),
            Some(Err(broken)) => Err(broken),
            None => Ok(()),
        }
    }

    /// Whether a line is ready to be taken without waiting.
    pub(crate) fn any_line_ready(&self) -> bool {
        self.lines.any_ready()
    }

    /// The next line from the program and when it arrived; [`Broken::Timeout`] (of `timeout`) at
    /// `deadline`.
    pub(crate) fn next_line(&self, deadline: Instant, timeout: Duration) -> Result<(Vec<u8>, Instant), Broken> {
        loop {
            if let Some(line) = self.next_line_or_nudge(deadline, timeout)? {
                return Ok(line);
            }
        }
    }

    /// [`Program::next_line`], or `None` when the program's [`Nudge`] comes first.
    pub(crate) fn next_line_or_nudge(
        &self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Option<(Vec<u8>, Instant)>, Broken> {
        let received = |line: Line| match line {
            Line { bytes: Ok(line), arrived } => Ok(Some((line, arrived))),
            Line { bytes: Err(broken), .. } => Err(broken),
        };
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_or_nudge(wait.min(EXIT_CHECK)) {
                Ok(Some(line)) => return received(line),
                Ok(None) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Err(Broken::Closed),
                Err(RecvTimeoutError::Timeout) if wait <= EXIT_CHECK => return Err(Broken::Timeout(timeout)),
                // A process the program started can hold its output open after the program died,
                // so the output never closes: the program's own end is what says it died.
                Err(RecvTimeoutError::Timeout) if process_group::has_exited(self.process.id()) => {
                    // What it wrote just before it died may still be on its way.
                    return match self.lines.recv_timeout(EXIT_CHECK) {
                        Ok(line) => received(line),
                        Err(_) => Err(Broken::Closed),
                    };
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// Spawns `launch` ([`Program::spawn`]) and reads its first message, the hello, within
    /// `timeout` or [`MIN_STARTUP`], whichever is longer. A hello that is `{"error": ...}` (the
    /// program refuses to start) is that message, the program stopped; whatever else breaks is said
    /// as [`Program::finish`] says it. The hello is the caller's to read.
    pub(crate) fn start(
        launch: &Launch,
        memory_mb: Option<u64>,
        timeout: Duration,
    ) -> Result<(Program, serde_json::Value), StartError> {
        let program = Program::spawn(launch, memory_mb)?;
        let startup = timeout.max(MIN_STARTUP);
        let hello = match program.next_message(Instant::now() + startup, startup) {
            Ok((hello, _)) => hello,
            Err(broken) => return Err(StartError::Stopped(program.finish(Some(broken)))),
        };
        if let Some(message) = hello.get("error") {
            let message = super::text_of(message);
            program.finish(None);
            return Err(StartError::Refused(message));
        }
        Ok((program, hello))
    }

    /// The next line from the program as a JSON object, and when it arrived.
    pub(crate) fn next_message(
        &self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(serde_json::Value, Instant), Broken> {
        let (line, arrived) = self.next_line(deadline, timeout)?;
        Ok((parse_message(&line)?, arrived))
    }

    /// Stops a program that is no longer usable, with its whole process group, and says why:
    /// `broken`, or — when the program went silent because it died (its output closed, or it
    /// stopped reading) — how the process ended. A program that wrote something wrong keeps that as
    /// the reason even if it exited right after.
    pub(crate) fn finish(mut self, broken: Option<Broken>) -> String {
        self.stdin.take();
        let pid = self.process.id();
        let died = broken.as_ref().is_some_and(Broken::died);
        let mut exited = process_group::has_exited(pid);
        if !exited && died {
            // It is exiting right now: give it a moment to end on its own.
            let grace = Instant::now() + Duration::from_secs(2);
            while !exited && Instant::now() < grace {
                std::thread::sleep(Duration::from_millis(2));
                exited = process_group::has_exited(pid);
            }
        }
        // Before the program is reaped, while its pid still names its group.
        process_group::kill(pid);
        let status = self.process.wait();
        process_group::forget(pid);
        match status {
            Ok(status) if died && exited => describe_exit(status, self.role),
            _ => broken.map(|broken| broken.describe(self.role)).unwrap_or_default(),
        }
    }

    /// Ends a program critbench is done with: its stdin closes, the protocol's way to say goodbye,
    /// and the kill of its group makes sure, for the program and whatever it started.
    pub(crate) fn close(mut self) {
        self.stdin.take();
        let pid = self.process.id();
        process_group::kill(pid);
        let _ = self.process.wait();
        process_group::forget(pid);
    }
}

/// How a program's process ended, in words.
fn describe_exit(status: ExitStatus, role: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = match signal {
            libc::SIGSEGV => " (SIGSEGV: a crash)",
            libc::SIGABRT => " (SIGABRT: an abort)",
            libc::SIGKILL => " (SIGKILL)",
            libc::SIGBUS => " (SIGBUS: a crash)",
            libc::SIGFPE => " (SIGFPE: a crash)",
            libc::SIGILL => " (SIGILL: a crash)",
            _ => "",
        };
        format!("the {role} process was killed by signal {signal}{name}")
    } else {
        format!("the {role} process exited with status {}", status.code().unwrap_or(-1))
    }
}

/// Why a command could not be made into a [`Launch`].
#[derive(Debug)]
pub(crate) enum CommandProblem {
    /// The command is empty.
    Empty,
    /// Its program is nowhere.
    NoProgram(String),
    /// The file hashed could not be read.
    Unreadable(PathBuf, std::io::Error),
}

/// How to start `command` as a program of `role`, run in `base_dir` (a program with a `/` is
/// relative to it, a bare name is looked up on `PATH`), with the program's path and the sha256 of
/// what changes between its versions: the first argument that names a file (the script of
/// `python3 x.py`), else the program.
pub(crate) fn command_launch(
    command: &[String],
    base_dir: Option<&Path>,
    role: Role,
    env: &[String],
) -> Result<(Launch, PathBuf, String), CommandProblem> {
    let program = command.first().ok_or(CommandProblem::Empty)?;
    let path = resolve_program(program, base_dir)
        .filter(|p| p.is_file())
        .ok_or_else(|| CommandProblem::NoProgram(program.clone()))?;
    let cwd = base_dir.filter(|d| !d.as_os_str().is_empty()).map(Path::to_path_buf);
    let in_cwd = |arg: &String| cwd.as_ref().map_or_else(|| PathBuf::from(arg), |dir| dir.join(arg));
    let hashed = command[1..].iter().map(in_cwd).find(|p| p.is_file()).unwrap_or_else(|| path.clone());
    let sha256 = sha256_of(&hashed).map_err(|e| CommandProblem::Unreadable(hashed, e))?;
    let launch = Launch {
        program: path.clone().into_os_string(),
        args: command[1..].iter().map(OsString::from).collect(),
        cwd,
        label: command.join(" "),
        role,
        env: Some(clean_env(env)),
    };
    Ok((launch, path, sha256))
}

/// The variables a command is given: [`BASE_ENV`] and `named`, each once.
fn clean_env(named: &[String]) -> Vec<String> {
    let mut names: Vec<String> = BASE_ENV.iter().map(|name| name.to_string()).collect();
    for name in named {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// The hex sha256 of a file's bytes.
pub(crate) fn sha256_of(path: &Path) -> std::io::Result<String> {
    use sha2::Digest as _;
    Ok(critbench_core::hex(&sha2::Sha256::digest(std::fs::read(path)?)))
}

/// The program of a command: a path with a `/` is taken relative to `base_dir`; a bare name is
/// looked up on `PATH`.
pub(crate) fn resolve_program(program: &str, base_dir: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return Some(match base_dir {
            Some(base) if path.is_relative() => base.join(path),
            _ => path,
        });
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|dir| dir.join(program)).find(|p| p.is_file())
}
