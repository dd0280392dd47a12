//! The simulator's hidden truth, with the real binary: a critic that asks for what it likes, not
//! for what is wrong, is pleased by feedback while the truth does not move, and the run says so
//! first; the built-in critics, which name real defects, gain by the truth too; no critic's request
//! carries the truth; and `sim-truth` is refused where it cannot judge.

use std::path::Path;

use crate::common::*;

/// Wants three sentences and the task's `meta.keyword`, and gives `edit` suggestions that say so;
/// logs whether a request carried a `truth` (a critic must never see one).
const THREE_SENTENCES: &str = r#"
import json, re, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "three-sentences", "version": "1.0", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
log = open("critic-requests.txt", "a")
for line in sys.stdin:
    message = json.loads(line)
    request = message["request"]
    log.write(("truth" if "truth" in request else "none") + "\n"); log.flush()
    draft, keyword = request["draft"], request["task"]["meta"]["keyword"]
    issues, suggestions = [], []
    if len([s for s in re.split(r"(?<=[.!?])\s+", draft.strip()) if s]) < 3:
        issues.append({"text": "fewer than three sentences", "type": "too_few_sentences"})
        suggestions.append({"edit": "This answer explains the point in a third sentence about %s." % keyword})
    if keyword not in draft.lower():
        issues.append({"text": "does not mention %s" % keyword, "type": "missing_keyword"})
        suggestions.append({"edit": "The key idea here is %s." % keyword})
    send({"id": message["id"], "critique": {"score": 10 - 4 * len(issues), "issues": issues, "suggestions": suggestions}})
"#;

/// 20 questions with source material, each with a keyword the critic wants.
fn questions(dir: &Path) {
    let topics = [
        ("bread rise", "yeast"),
        ("ice float", "density"),
        ("the sky look blue", "scattering"),
        ("leaves change colour", "chlorophyll"),
        ("a magnet attract iron", "domains"),
        ("bees make honey", "nectar"),
        ("the tide come in", "moon"),
        ("iron rust", "oxygen"),
        ("thunder follow lightning", "sound"),
        ("a bubble pop", "tension"),
        ("salt melt ice", "freezing"),
        ("a cat purr", "vibration"),
        ("a rainbow appear", "refraction"),
        ("dough need sugar", "fermentation"),
        ("metal feel cold", "conduction"),
        ("birds migrate", "season"),
        ("a volcano erupt", "magma"),
        ("a plant need light", "photosynthesis"),
        ("soap clean", "molecules"),
        ("a star twinkle", "atmosphere"),
    ];
    let rows: String = topics
        .iter()
        .enumerate()
        .map(|(i, (topic, keyword))| {
            let task = serde_json::json!({
                "id": format!("q{i}"),
                "prompt": format!("Why does {topic}?"),
                "context": format!("The main reason involves {keyword}. Scientists have studied why {topic} for a long time."),
                "meta": {"keyword": keyword},
            });
            format!("{task}\n")
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), rows).unwrap();
}

fn comparison<'a>(
    rows: &'a [std::collections::HashMap<String, String>],
    critic: &str,
    evaluator: Option<&str>,
) -> &'a std::collections::HashMap<String, String> {
    rows.iter()
        .find(|r| {
            r["critic"] == critic
                && r["arm_a"] == "feedback"
                && r["arm_b"] == "no-feedback"
                && evaluator.is_none_or(|e| r["evaluator"] == e)
        })
        .unwrap_or_else(|| panic!("no feedback − no-feedback row of {critic}"))
}

fn number(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column].parse().unwrap_or_else(|_| panic!("{column} = {:?}", row[column]))
}

#[test]
fn a_critic_that_names_no_real_defect_pleases_its_own_verdict_not_the_truth_and_the_run_says_so_first() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("critic.py"), THREE_SENTENCES).unwrap();
    questions(dir.path());
    let file = experiment(
        dir.path(),
        "three.toml",
        "name = \"three\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\nepochs = 3\nstore_drafts = true\n\
         [[critics]]\nname = \"three-sentences\"\ncommand = [\"python3\", \"critic.py\"]\n\
         [policy]\npass_score = 8\nmax_revisions = 3\n",
    );
    let out = dir.path().join("three");
    let printed = ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));

    // The critic's own verdict: feedback pleases it by far.
    let critic = comparison(&csv_rows(&out.join("comparisons.csv")), "three-sentences", None).clone();
    assert!(number(&critic, "diff") > 0.25, "{critic:?}");
    // The truth: no better.
    let truth =
        comparison(&csv_rows(&out.join("evaluator_comparisons.csv")), "three-sentences", Some("sim-truth")).clone();
    assert!(number(&truth, "diff").abs() < 0.1, "{truth:?}");
    assert!(number(&truth, "diff_lo") < 0.0 && number(&truth, "diff_hi") > 0.0, "{truth:?}");
    // And the terminal leads with it.
    let first = printed.lines().next().unwrap();
    assert!(first.starts_with("three-sentences: none of its "), "{printed}");
    assert!(first.contains("its pass rates below measure how well the writer pleases it, not how good"), "{first}");
    let truth_line = printed.lines().nth(1).unwrap();
    assert!(truth_line.starts_with("  p8-r3-stall-e0: feedback − no-feedback "), "{printed}");
    assert!(printed.find("three-sentences: none").unwrap() < printed.find("The answer, by").unwrap());

    // The truth's feedback pass rate, by hand from evaluations.parquet: the final answers' rows.
    let rows = critbench_storage::evaluations::read_evaluations(&out.join("evaluations.parquet")).unwrap();
    let finals = |arm: &str| {
        let verdicts: Vec<bool> = rows
            .iter()
            .filter(|r| r.evaluator == "sim-truth" && r.answer == "final" && r.arm.as_str() == arm)
            .map(|r| r.passed.expect("sim-truth always gives a verdict on a simulated draft"))
            .collect();
        assert_eq!(verdicts.len(), 60, "{arm}: 20 tasks × 3 epochs");
        verdicts.iter().filter(|p| **p).count() as f64 / 60.0
    };
    let by_hand = finals("feedback") - finals("no-feedback");
    assert!((by_hand - number(&truth, "diff")).abs() < 1e-9, "{by_hand} against {truth:?}");
    // Every recorded draft is judged, each defect one the prose writer documents.
    let trajectories = recorded_rounds(&out);
    let judged = rows.iter().filter(|r| r.evaluator == "sim-truth").count();
    assert!(judged >= trajectories.len(), "{judged} verdicts for {} rounds", trajectories.len());
    for row in rows.iter().filter(|r| r.evaluator == "sim-truth") {
        for defect in &row.critique.issue_types {
            assert!(["missing_reasons", "unsupported_claim"].contains(&defect.as_str()), "{defect}");
        }
        assert_eq!(row.passed, Some(row.critique.issue_types.is_empty()));
    }
    // The critic never saw a truth.
    let requests = std::fs::read_to_string(dir.path().join("critic-requests.txt")).unwrap();
    assert!(requests.lines().count() > 100 && requests.lines().all(|l| l == "none"), "{requests}");
}

#[test]
fn the_built_in_critics_name_real_defects_and_their_feedback_gains_by_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let datasets = repo().join("datasets");
    let file = experiment(
        dir.path(),
        "demo.toml",
        &format!(
            "name = \"demo\"\ndataset = [\"{}\", \"{}\"]\nbackend = \"sim\"\nseed = 7\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\nkinds = [\"paper\"]\n\
             [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\nkinds = [\"rag\"]\n\
             [policy]\npass_score = 8\nmax_revisions = 3\n",
            datasets.join("papers.jsonl").display(),
            datasets.join("rag.jsonl").display()
        ),
    );
    let out = dir.path().join("demo");
    let printed = ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    assert!(printed.starts_with("The answer, by `sim-truth`"), "no critic is said to name no defect:\n{printed}");
    let rows = csv_rows(&out.join("evaluator_comparisons.csv"));
    for critic in ["rubric", "evidence"] {
        let truth = comparison(&rows, critic, Some("sim-truth"));
        assert!(number(truth, "diff_lo") > 0.05, "{critic}: {truth:?}");
    }
    let manifest = manifest(&out);
    let evaluators = manifest["experiment"]["evaluators"].as_array().unwrap();
    assert_eq!(evaluators.len(), 1);
    assert_eq!(
        (evaluators[0]["name"].as_str(), evaluators[0]["all_rounds"].as_bool()),
        (Some("sim-truth"), Some(true))
    );
}

#[test]
fn sim_truth_is_left_out_on_request_and_refused_where_it_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    questions(dir.path());
    let base = "name = \"t\"\ndataset = \"tasks.jsonl\"\n";
    let rubric = "[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";
    let off = experiment(dir.path(), "off.toml", &format!("{base}sim_truth = false\nstore_drafts = true\n{rubric}"));
    let out = dir.path().join("off");
    ok(critbench(&["run", off.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    assert!(!out.join("evaluations.parquet").exists());
    // Stored drafts carry only their text: nothing for sim-truth to rescore.
    let rescore = critbench(&["rescore", out.to_str().unwrap(), "--critic", "truth", "--plugin", "sim-truth"]);
    let error = usage_error(rescore, dir.path());
    assert!(error.contains("critic `truth` is `sim-truth`") && error.contains("nothing to rescore"), "{error}");

    let cases = [
        (
            format!("{base}[[critics]]\nname = \"t\"\nplugin = \"sim-truth\"\n"),
            "critics[0]: `sim-truth` is a held-out evaluator, not a critic",
        ),
        (
            format!("{base}backend = \"scripted\"\nsim_truth = true\n{rubric}"),
            "`sim_truth` = true: the `sim-truth` evaluator judges",
        ),
        (
            format!("{base}backend = \"scripted\"\n{rubric}[[evaluators]]\nname = \"e\"\nplugin = \"sim-truth\"\n"),
            "evaluators[0]: the `sim-truth` evaluator judges the simulated writer's hidden truth",
        ),
        (
            format!("{base}{rubric}[[critics]]\nname = \"sim-truth\"\nplugin = \"rubric\"\n"),
            "the name \"sim-truth\" is taken",
        ),
    ];
    for (index, (text, wanted)) in cases.iter().enumerate() {
        let file = experiment(dir.path(), &format!("bad{index}.toml"), text);
        let error = usage_error(critbench(&["run", file.to_str().unwrap(), "-q"]), dir.path());
        assert!(error.contains(wanted), "{text}\n{error}");
    }
}

/// The ceiling the critic's false passes put on `resample`, recomputed from `evaluations.parquet`:
/// over the resample loops' first drafts, p (the truth passes), t (the critic passes of those),
/// f (the critic passes of those the truth fails), and p·t / (p·t + (1 − p)·f); no other arm has one.
#[test]
fn the_resample_ceiling_is_the_share_of_the_critics_passes_the_truth_passes() {
    let dir = tempfile::tempdir().unwrap();
    let datasets = repo().join("datasets");
    let file = experiment(
        dir.path(),
        "papers.toml",
        &format!(
            "name = \"papers\"\ndataset = \"{}\"\nbackend = \"sim\"\nseed = 7\nepochs = 2\n\
             arms = [\"feedback\", \"resample\"]\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n\
             [policy]\npass_score = 7\nmax_revisions = 3\n",
            datasets.join("papers.jsonl").display()
        ),
    );
    let out = dir.path().join("papers");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--limit", "60"]));
    let rows = critbench_storage::evaluations::read_evaluations(&out.join("evaluations.parquet")).unwrap();
    let firsts: Vec<(bool, bool)> = rows
        .iter()
        .filter(|r| r.arm.as_str() == "resample" && r.answer == "first")
        .map(|r| (r.passed.unwrap(), r.steering_passed))
        .collect();
    assert_eq!(firsts.len(), 120);
    let share = |of: &dyn Fn(&(bool, bool)) -> bool, among: &dyn Fn(&(bool, bool)) -> bool| {
        let among: Vec<_> = firsts.iter().filter(|v| among(v)).collect();
        among.iter().filter(|v| of(v)).count() as f64 / among.len() as f64
    };
    let p = share(&|v| v.0, &|_| true);
    let t = share(&|v| v.1, &|v| v.0);
    let f = share(&|v| v.1, &|v| !v.0);
    assert!(f > 0.0 && p > 0.0, "the rubric passes some defective papers and the truth some papers: f {f}, p {p}");
    let ceiling = p * t / (p * t + (1.0 - p) * f);
    let csv = csv_rows(&out.join("evaluators.csv"));
    let resample = csv.iter().find(|r| r["arm"] == "resample").unwrap();
    assert!((number(resample, "false_pass_rate") - f).abs() < 1e-12, "{resample:?}");
    assert!((number(resample, "resample_ceiling") - ceiling).abs() < 1e-12, "{ceiling}: {resample:?}");
    assert!(number(resample, "resample_ceiling_lo") <= ceiling && ceiling <= number(resample, "resample_ceiling_hi"));
    assert!(number(resample, "resample_ceiling") < 0.9, "a critic with false passes caps resampling: {resample:?}");
    let feedback = csv.iter().find(|r| r["arm"] == "feedback").unwrap();
    assert_eq!(feedback["resample_ceiling"], "", "only the resample arm has a ceiling");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        markdown.contains("| config | critic | evaluator | false-pass rate (95% CI) | resample ceiling (95% CI) |")
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"table-resample-ceiling\""));
}
