mod common;
use common::*;
use critbench_core::Arm;
use critbench_rubric::Rubric;
#[test]
#[ignore]
fn show() {
    let critic: Rubric = create("{}").unwrap();
    let tasks = dataset("papers.jsonl");
    for t in tasks.iter().take(3) {
        let o = run_loop(t, Arm::Feedback, &critic, 7, 0);
        eprintln!("===== {} d={:?} exit {}", t.id, t.meta_number("difficulty"), o.exit);
        for (k, (d, c)) in o.drafts.iter().zip(&o.critiques).enumerate() {
            eprintln!(
                "--- round {k} score {:.2} dims {:?}\n{d}\nissues {:?}\nsuggestions {:?}",
                c.score,
                c.dimensions,
                c.issues,
                c.suggestions.iter().map(|s| (s.target.clone(), s.edit.clone())).collect::<Vec<_>>()
            );
        }
    }
}
