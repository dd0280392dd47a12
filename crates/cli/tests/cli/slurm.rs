//! A real single-node Slurm cluster on this machine (munged, slurmctld and slurmd on 127.0.0.1,
//! from Debian's `slurm-wlm` and `munge`), the demo submitted as a job array through the shipped
//! `deploy/slurm/critbench.sbatch`, merged, and checked against the run in one piece. Every
//! daemon the test starts is stopped when it ends, passed or failed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The daemons of the cluster and its job, ended when dropped (jobs cancelled first).
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    job: Option<String>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(job) = &self.job {
            let _ = self.command("scancel").arg(job).status();
        }
        // slurmd first (it ends the job steps it started), then the controller, then munged.
        for (_, daemon) in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill").args(["-TERM", &daemon.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while daemon.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

impl Cluster {
    /// A Slurm command (sbatch, sinfo, squeue, scancel) talking to this cluster.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf);
        for (name, _) in std::env::vars() {
            // A test run inside a Slurm job must not hand that job's variables on.
            if name.starts_with("SLURM_") && name != "SLURM_CONF" {
                command.env_remove(name);
            }
        }
        command
    }

    fn start(&mut self, name: &'static str, program: &str, args: &[&str]) {
        let log = std::fs::File::create(self.dir.join(format!("{name}.out"))).unwrap();
        let child = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program} (apt-get install slurm-wlm munge): {e}"));
        self.daemons.push((name, child));
    }

    /// Waits for `ready`, failing with the daemons' logs after `limit`.
    fn wait_for(&mut self, what: &str, limit: Duration, mut ready: impl FnMut(&Cluster) -> bool) {
        let deadline = Instant::now() + limit;
        while !ready(self) {
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|(name, daemon)| daemon.try_wait().ok().flatten().map(|status| (*name, status)));
            if let Some((name, status)) = exited {
                panic!("{name} exited ({status}) while waiting for {what}:\n{}", self.logs());
            }
            assert!(Instant::now() < deadline, "no {what} after {limit:?}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn logs(&self) -> String {
        let mut text = String::new();
        for name in ["munged.out", "slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"] {
            let mut content = String::new();
            if let Ok(mut file) = std::fs::File::open(self.dir.join(name)) {
                let _ = file.read_to_string(&mut content);
            }
            let tail: Vec<&str> = content.lines().rev().take(15).collect();
            text.push_str(&format!("--- {name}\n{}\n", tail.into_iter().rev().collect::<Vec<_>>().join("\n")));
        }
        text
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn output(command: &mut Command) -> String {
    let output = command.output().expect("the command runs");
    assert!(output.status.success(), "{command:?} failed:\n{}{}", stdout(&output), stderr(&output));
    stdout(&output)
}

/// Brings up munged, slurmctld and slurmd in `dir`, with the node's real CPUs and memory.
fn cluster(dir: &Path) -> Cluster {
    // munged wants the socket's folder searchable by everyone and the key private.
    std::fs::create_dir_all(dir.join("state")).unwrap();
    std::fs::create_dir_all(dir.join("spool")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let key = dir.join("munge.key");
    output(Command::new("mungekey").arg("--create").arg("--keyfile").arg(&key));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let socket = dir.join("munge.socket");

    // `slurmd -C` prints this node as slurm.conf describes it: name, CPUs, memory.
    let node = output(Command::new("slurmd").arg("-C"));
    let node = node.lines().find(|line| line.starts_with("NodeName=")).expect("slurmd -C names the node").to_string();
    let conf = dir.join("slurm.conf");
    let d = dir.display();
    let text = format!(
        "ClusterName=critbench\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\n\
         AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={socket}\n\
         SlurmctldPort={ctld}\nSlurmdPort={slurmd}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
         SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
         SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
         ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSchedulerType=sched/builtin\n\
         SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\nMpiDefault=none\n\
         JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
         {node} NodeAddr=127.0.0.1 State=UNKNOWN\nPartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
        host = node.trim_start_matches("NodeName=").split_whitespace().next().unwrap(),
        socket = socket.display(),
        ctld = free_port(),
        slurmd = free_port(),
    );
    std::fs::write(&conf, text).unwrap();

    let mut cluster = Cluster { dir: dir.to_path_buf(), conf: conf.clone(), daemons: Vec::new(), job: None };
    let d = |name: &str| dir.join(name).display().to_string();
    cluster.start(
        "munged",
        "munged",
        &[
            "--foreground",
            "--force",
            &format!("--key-file={}", key.display()),
            &format!("--socket={}", socket.display()),
            &format!("--pid-file={}", d("munged.pid")),
            &format!("--log-file={}", d("munged.log")),
            &format!("--seed-file={}", d("munged.seed")),
        ],
    );
    cluster.wait_for("munge socket", Duration::from_secs(20), |_| socket.exists());
    let conf = conf.display().to_string();
    cluster.start("slurmctld", "slurmctld", &["-D", "-f", &conf]);
    cluster.start("slurmd", "slurmd", &["-D", "-f", &conf]);
    cluster.wait_for("idle node", Duration::from_secs(60), |c| {
        c.command("sinfo").args(["-h", "-o", "%T"]).output().is_ok_and(|o| stdout(&o).trim() == "idle")
    });
    cluster
}

#[test]
#[ignore = "needs slurm (slurm-wlm, munge)"]
fn the_demo_as_a_slurm_job_array_merges_to_the_run_in_one_piece() {
    require_plugins();
    let dir = tempfile::Builder::new().prefix("critbench-slurm").tempdir().unwrap();
    let started = Instant::now();
    let mut cluster = cluster(&dir.path().join("cluster"));
    let up = started.elapsed();

    let (whole, sharded) = (dir.path().join("whole"), dir.path().join("sharded"));
    ok(critbench(&["run", "experiments/demo.toml", "--quiet", "--limit", "30", "--out", whole.to_str().unwrap()]));

    let submitted = output(
        cluster
            .command("sbatch")
            .args(["--parsable", "--array=0-2", "--time=10"])
            .arg(format!("--chdir={}", repo().display()))
            .arg(format!("--output={}/task-%a.out", dir.path().display()))
            .arg(repo().join("deploy/slurm/critbench.sbatch"))
            .arg(&sharded)
            .args(["experiments/demo.toml", "--limit", "30"])
            .env("CRITBENCH", binary()),
    );
    let job = submitted.trim().split(';').next().unwrap().to_string();
    cluster.job = Some(job.clone());
    cluster.wait_for("the array to finish", Duration::from_secs(300), |c| {
        c.command("squeue")
            .args(["-h", "-j", &job])
            .output()
            .is_ok_and(|o| o.status.success() && stdout(&o).trim().is_empty())
    });
    for task in 0..3 {
        let log = std::fs::read_to_string(dir.path().join(format!("task-{task}.out"))).unwrap_or_default();
        assert!(log.contains(&format!("shard {task}/3 done")), "array task {task}:\n{log}\n{}", cluster.logs());
    }
    cluster.job = None;

    ok(critbench(&["merge", sharded.to_str().unwrap()]));
    let same = crate::common::python()
        .arg(repo().join("tests/python/same_rows.py"))
        .args([&whole, &sharded])
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs tests/python/same_rows.py");
    assert!(same.status.success(), "{}{}", stdout(&same), stderr(&same));
    for file in ["summary.csv", "comparisons.csv", "config_comparisons.csv"] {
        assert_eq!(
            std::fs::read_to_string(whole.join(file)).unwrap(),
            std::fs::read_to_string(sharded.join(file)).unwrap(),
            "{file}"
        );
    }
    // A requeued task whose shard already finished leaves it as it is.
    let again = Command::new("bash")
        .arg(repo().join("deploy/slurm/critbench.sbatch"))
        .arg(&sharded)
        .env("SLURM_ARRAY_TASK_ID", "1")
        .env("SLURM_ARRAY_TASK_MIN", "0")
        .env("SLURM_ARRAY_TASK_MAX", "2")
        .env("CRITBENCH", binary())
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(stdout(&again).contains("shard 1 of") && stdout(&again).contains("already finished"), "{again:?}");
    eprintln!("cluster up in {up:?}; whole test {:?}", started.elapsed());
}
