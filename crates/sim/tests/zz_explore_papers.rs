mod common;
use common::*;
use critbench_core::Arm;
use critbench_rubric::Rubric;
#[test]
#[ignore]
fn explore() {
    let critic: Rubric = create("{}").unwrap();
    let tasks = dataset("papers.jsonl");
    for seed in [7u64, 11, 23] {
        for epoch in 0..3 {
            let mut s: [ArmSummary; 3] = Default::default();
            for t in &tasks {
                for (arm, sum) in Arm::ALL.into_iter().zip(s.iter_mut()) {
                    sum.add(&run_loop(t, arm, &critic, seed, epoch));
                }
            }
            eprintln!(
                "seed {seed:2} epoch {epoch}: fb {:.3} (p{} s{} b{})  nofb {:.3} (p{} s{} b{})  single {:.3}",
                s[0].pass_rate(),
                s[0].count("pass"),
                s[0].count("stall"),
                s[0].count("budget"),
                s[1].pass_rate(),
                s[1].count("pass"),
                s[1].count("stall"),
                s[1].count("budget"),
                s[2].pass_rate()
            );
        }
    }
}
