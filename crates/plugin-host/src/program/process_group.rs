//! Child programs in process groups of their own, so that a program goes with everything it
//! started (`docs/PROTOCOL.md`, "Processes").
//!
//! Each child is started as the leader of a new process group, with `PR_SET_PDEATHSIG` = SIGKILL
//! (Linux) and its address-space limit; whatever it forks stays in its group unless it leaves on
//! purpose (`setsid`, `setpgid`). The host kills the whole group whenever it stops a child
//! ([`kill`]). When critbench itself dies — SIGKILL included, where no code of it runs — the
//! direct children die of `PR_SET_PDEATHSIG`, and the *guardian* kills their groups: a small
//! process forked from critbench at its first child, which holds the read end of a pipe, learns
//! every group as it starts and ends, and when the pipe's last writer (critbench) is gone kills
//! the groups still alive and exits.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

/// Starts `command` as the leader of a new process group that dies with critbench, with an
/// address space of at most `memory_mb` MiB.
pub(crate) fn spawn(mut command: Command, memory_mb: Option<u64>) -> io::Result<Child> {
    let guardian = guardian();
    prepare(&mut command, memory_mb);
    let child = spawn_from_one_thread(command)?;
    if let Some(guardian) = guardian {
        guardian.send(child.id() as i32);
    }
    Ok(child)
}

/// Kills the process group of the child `pid` (the child itself, if it still runs, and whatever
/// it started). Call it before reaping the child: until then its pid cannot name another group.
pub(crate) fn kill(pid: u32) {
    // SAFETY: a plain system call; `-pid` names the group the child leads.
    unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
}

/// Tells the guardian the group of `pid` is gone (killed, and its leader reaped).
pub(crate) fn forget(pid: u32) {
    if let Some(guardian) = guardian() {
        guardian.send(-(pid as i32));
    }
}

/// Whether the child `pid` has exited, without reaping it.
pub(crate) fn has_exited(pid: u32) -> bool {
    // SAFETY: zeroed siginfo_t is a valid out-parameter; WNOWAIT leaves the child waitable.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) == 0 && info.si_pid() != 0
    }
}

/// Makes the child lead its own process group and die with critbench, and limits its address
/// space.
fn prepare(command: &mut Command, memory_mb: Option<u64>) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    let limit = memory_mb.map(|mb| (mb << 20) as libc::rlim_t);
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (prctl, getppid, setpgid, setrlimit).
    unsafe {
        command.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // critbench may have died between fork and prctl.
                if libc::getppid() != parent {
                    return Err(io::Error::other("critbench exited"));
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = parent;
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(bytes) = limit {
                let rlimit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                if libc::setrlimit(libc::RLIMIT_AS, &rlimit) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

type SpawnRequest = (Command, Sender<io::Result<Child>>);

/// Spawns `command` from one thread that lives as long as the process: `PR_SET_PDEATHSIG` fires
/// when the *thread* that forked the child exits, and worker threads come and go.
fn spawn_from_one_thread(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (sender, requests) = channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("critbench-spawner".into())
            .spawn(move || {
                for (mut command, reply) in requests {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("the spawner thread starts");
        Mutex::new(sender)
    });
    let (reply, answer) = channel();
    spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((command, reply))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer.recv().map_err(|_| io::Error::other("the spawner thread is gone"))?
}

/// The write end of the guardian's pipe. Each message is one `i32` in native byte order: a
/// group's id when it starts, its negation when it is gone. A message is shorter than
/// `PIPE_BUF`, so writes from several threads never interleave.
struct Guardian {
    pipe: libc::c_int,
}

/// The guardian, started at the first call; `None` where it could not be started (the groups are
/// then still killed whenever critbench stops a child, and the children die with critbench).
fn guardian() -> Option<&'static Guardian> {
    static GUARDIAN: OnceLock<Option<Guardian>> = OnceLock::new();
    GUARDIAN.get_or_init(|| Guardian::start().ok()).as_ref()
}

impl Guardian {
    #[cfg(target_os = "linux")]
    fn start() -> io::Result<Guardian> {
        let mut ends = [0 as libc::c_int; 2];
        // SAFETY: a valid two-descriptor array. O_CLOEXEC: no program inherits the write end,
        // which would keep the guardian from ever seeing critbench go.
        if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let [read, write] = ends;
        // SAFETY: the child runs `guard`, which makes only async-signal-safe calls and never
        // returns; the parent goes on as before.
        match unsafe { libc::fork() } {
            -1 => {
                let error = io::Error::last_os_error();
                // SAFETY: descriptors this function opened.
                unsafe {
                    libc::close(read);
                    libc::close(write);
                }
                Err(error)
            }
            // SAFETY: in the forked child, see `guard`.
            0 => unsafe { guard(read, write) },
            _ => {
                // SAFETY: the guardian holds its own copy of the read end.
                unsafe { libc::close(read) };
                Ok(Guardian { pipe: write })
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn start() -> io::Result<Guardian> {
        Err(io::Error::other("the guardian process is implemented for Linux only"))
    }

    fn send(&self, message: i32) {
        let bytes = message.to_ne_bytes();
        // SAFETY: four valid bytes to a descriptor this process owns. A failed write (the
        // guardian is gone) leaves nothing to do.
        unsafe { libc::write(self.pipe, bytes.as_ptr().cast(), bytes.len()) };
    }
}

/// The most groups the guardian keeps; one per live child program, so far more than a run has.
#[cfg(target_os = "linux")]
const MAX_GROUPS: usize = 4096;

/// The guardian's whole life, in the child forked from critbench: it reads the groups from the
/// pipe until critbench is gone, then kills those still alive. critbench has other threads whose
/// locks this copy of its memory may hold, so only async-signal-safe calls are made here, nothing
/// is allocated and nothing can panic.
///
/// # Safety
/// Call only in a freshly forked child, with the two ends of the guardian's pipe.
#[cfg(target_os = "linux")]
unsafe fn guard(read: libc::c_int, write: libc::c_int) -> ! {
    // SAFETY: async-signal-safe system calls on this process's own descriptors and signals.
    unsafe {
        libc::close(write);
        // A group of its own: a signal to critbench's group (Ctrl-C, a job-control kill) leaves
        // the guardian to do its work.
        libc::setpgid(0, 0);
        // critbench's own handlers (SIGINT, SIGTERM) came along with the fork; they are not the
        // guardian's. An explicit SIGTERM ends it; the terminal's signals do not.
        for signal in 1..libc::SIGRTMIN() {
            libc::signal(signal, libc::SIG_DFL);
        }
        for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU] {
            libc::signal(signal, libc::SIG_IGN);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        // A copy of a program's stdin would keep it from seeing critbench close it; a copy of
        // critbench's stdout would keep a reader of critbench's output waiting.
        close_all_but(read);
        let mut groups = [0 as libc::pid_t; MAX_GROUPS];
        let mut count = 0;
        let mut buffer = [0u8; 256];
        let mut filled = 0;
        loop {
            let n = libc::read(read, buffer.as_mut_ptr().add(filled).cast(), buffer.len() - filled);
            if n == 0 {
                break;
            }
            if n < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break;
            }
            filled += n as usize;
            let whole = filled - filled % 4;
            for message in buffer[..whole].chunks_exact(4) {
                let group = i32::from_ne_bytes([message[0], message[1], message[2], message[3]]);
                if group > 0 {
                    if count < MAX_GROUPS {
                        groups[count] = group;
                        count += 1;
                    }
                } else if let Some(at) = groups[..count].iter().position(|&g| g == -group) {
                    count -= 1;
                    groups[at] = groups[count];
                }
            }
            buffer.copy_within(whole..filled, 0);
            filled -= whole;
        }
        // critbench is gone. A process forked while its group is being signalled gets the signal
        // as well; the second round, a moment later, is for what a slow fork still let through.
        for _ in 0..2 {
            for &group in &groups[..count] {
                libc::kill(-group, libc::SIGKILL);
            }
            let pause = libc::timespec { tv_sec: 0, tv_nsec: 50_000_000 };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::_exit(0)
    }
}

/// Closes every descriptor but `keep`.
///
/// # Safety
/// Only in a process whose descriptors nothing else uses (the guardian).
#[cfg(target_os = "linux")]
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = keep as libc::c_uint;
    // SAFETY: close_range closes descriptors only (Linux 5.9); the loop is the fallback.
    unsafe {
        let below = keep == 0 || libc::syscall(libc::SYS_close_range, 0 as libc::c_uint, keep - 1, 0) == 0;
        let above = libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0) == 0;
        if below && above {
            return;
        }
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        let open_max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20) as libc::c_int
        } else {
            1024
        };
        for fd in 0..open_max {
            if fd as libc::c_uint != keep {
                libc::close(fd);
            }
        }
    }
}
