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
    // Their issue types against the truth: precision and recall with their intervals.
    for row in csv_rows(&out.join("evaluators.csv")).iter().filter(|r| r["arm"] == "feedback") {
        for measure in ["precision", "recall"] {
            let (lo, value, hi) =
                (number(row, &format!("{measure}_lo")), number(row, measure), number(row, &format!("{measure}_hi")));
            assert!(lo <= value && value <= hi && hi - lo > 0.0, "{measure}: {row:?}");
            assert!(value > 0.5, "{} names mostly real defects and most of them: {row:?}", row["critic"]);
        }
    }
    assert!(
        printed.lines().filter(|l| l.starts_with("  its issue types by sim-truth, feedback: precision ")).count() == 2
    );
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

/// Names all seven of the paper writer's defect types as typed issues on every critique, never
/// reading the draft; its score rises a point a round, so a loop runs to its cap and answers with
/// its last draft.
const SHOTGUN: &str = r#"
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
TYPES = ["weak_clarity", "weak_novelty", "weak_evidence", "weak_methodology", "weak_related_work", "no_sections", "empty_draft"]
send({"protocol": 2, "name": "shotgun", "version": "1.0", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    issues = [{"text": "the paper may be %s" % t.replace("_", " "), "type": t} for t in TYPES]
    send({"id": message["id"], "critique": {"score": min(10, 4 + message["request"]["round"]), "issues": issues}})
"#;

/// Reads the draft by the paper writer's documented standard (docs/REFERENCE.md, Backends, `sim`)
/// and names only the defect types the draft does not have; scored as the shotgun is.
const WRONG_TYPES: &str = r##"
import json, re, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
TYPES = ["weak_clarity", "weak_novelty", "weak_evidence", "weak_methodology", "weak_related_work", "no_sections", "empty_draft"]
def sentences(text):
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
def kind(name):
    if "intro" in name: return "intro"
    if "related" in name or "prior work" in name or "background" in name: return "related"
    if "method" in name: return "method"
    if "conclu" in name or "discussion" in name: return "conclusion"
    return "results"
def has(draft):
    title, originality, sections, loose = None, None, [], []
    for line in draft.splitlines():
        line = line.strip()
        if not line:
            continue
        hashes = len(line) - len(line.lstrip("#"))
        if 0 < hashes <= 6:
            if hashes == 1 and title is None and not sections:
                title = line
            else:
                sections.append((line[hashes:].strip().lower(), []))
            continue
        m = re.match(r"[*_ ]*originality[*_ :]*([a-z]*)", line.lower())
        if m:
            originality = m.group(1)
            continue
        (sections[-1][1] if sections else loose).extend(sentences(line))
    every = loose + [s for _, body in sections for s in body]
    if not every:
        return {"empty_draft"}
    found = set() if sections else {"no_sections"}
    section = lambda k: next((body for name, body in sections if kind(name) == k), None)
    cites = lambda s: re.findall(r"\[([\d, \-]+)\]", s)
    method, related = section("method"), section("related")
    if method is None or len(method) < 2: found.add("weak_methodology")
    if related is None or not any(cites(s) for s in related): found.add("weak_related_work")
    numbers = {n for s in every for c in cites(s) for n in re.findall(r"\d+", c)}
    if not re.search(r"Figure \d", draft) or len(numbers) < 2: found.add("weak_evidence")
    if originality not in ("medium", "high"): found.add("weak_novelty")
    if section("intro") is None or any(len(body) < 2 for _, body in sections): found.add("weak_clarity")
    return found
send({"protocol": 2, "name": "wrong-types", "version": "1.0", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    request = message["request"]
    absent = [t for t in TYPES if t not in has(request["draft"])]
    issues = [{"text": "the paper is %s" % t.replace("_", " "), "type": t} for t in absent]
    send({"id": message["id"], "critique": {"score": min(10, 4 + request["round"]), "issues": issues}})
"##;

/// Wants the paper to mention what its prompt asks it to focus on ("focusing on X"; else
/// "limitations"), and gives an `edit` suggestion that says so.
const KEYWORD: &str = r#"
import json, re, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "keyword", "version": "1.0", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    request = message["request"]
    keyword = (re.findall(r"focusing on ([^.,]+)", request["task"]["prompt"]) or ["limitations"])[0]
    if keyword.lower() in request["draft"].lower():
        critique = {"score": 10}
    else:
        critique = {"score": 6, "issues": [{"text": "does not mention %s" % keyword, "type": "missing_keyword"}],
                    "suggestions": [{"edit": "The key idea here is %s." % keyword}]}
    send({"id": message["id"], "critique": critique})
"#;

fn optional(row: &std::collections::HashMap<String, String>, column: &str) -> Option<f64> {
    (!row[column].is_empty()).then(|| number(row, column))
}

/// On 120 of the demo's papers at `p8-r3`, the truth pays for naming real defects and charges for
/// naming absent ones: `rubric`'s feedback gains more than 10 points by the truth; a critic that
/// names every defect type on every draft gains at most half of that and most of its names are
/// wrong (flagged first); one that names only types the draft does not have gains nothing or
/// loses; one that wants a keyword gains nothing the truth can tell from 0.
#[test]
fn on_the_demo_papers_the_truth_pays_for_real_names_and_charges_for_wrong_ones() {
    let dir = tempfile::tempdir().unwrap();
    for (file, text) in [("shotgun.py", SHOTGUN), ("wrong.py", WRONG_TYPES), ("keyword.py", KEYWORD)] {
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    let file = experiment(
        dir.path(),
        "calibration.toml",
        &format!(
            "name = \"calibration\"\ndataset = \"{}\"\nbackend = \"sim\"\nseed = 7\nepochs = 3\n\
             arms = [\"feedback\", \"no-feedback\"]\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n\
             [[critics]]\nname = \"shotgun\"\ncommand = [\"python3\", \"shotgun.py\"]\n\
             [[critics]]\nname = \"wrong-types\"\ncommand = [\"python3\", \"wrong.py\"]\n\
             [[critics]]\nname = \"keyword\"\ncommand = [\"python3\", \"keyword.py\"]\n\
             [policy]\npass_score = 8\nmax_revisions = 3\n",
            repo().join("datasets/papers.jsonl").display()
        ),
    );
    let out = dir.path().join("calibration");
    let printed =
        ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--limit", "120"]));
    let comparisons = csv_rows(&out.join("evaluator_comparisons.csv"));
    let gain = |critic: &str| comparison(&comparisons, critic, Some("sim-truth")).clone();
    let (rubric, shotgun, wrong, keyword) = (gain("rubric"), gain("shotgun"), gain("wrong-types"), gain("keyword"));
    assert_eq!(rubric["tasks"], "120", "{rubric:?}");
    assert!(number(&rubric, "diff") > 0.10 && number(&rubric, "diff_lo") > 0.0, "{rubric:?}");
    assert!(number(&shotgun, "diff") <= number(&rubric, "diff") / 2.0, "{shotgun:?} against {rubric:?}");
    assert!(number(&wrong, "diff") <= 0.0, "{wrong:?}");
    assert!(number(&keyword, "diff_lo") < 0.0 && number(&keyword, "diff_hi") > 0.0, "{keyword:?}");

    // Precision and recall against the truth, on the sim-truth rows of evaluators.csv.
    let rows = csv_rows(&out.join("evaluators.csv"));
    let row = |critic: &str, arm: &str| {
        rows.iter().find(|r| r["critic"] == critic && r["arm"] == arm && r["evaluator"] == "sim-truth").unwrap().clone()
    };
    for critic in ["rubric", "shotgun", "wrong-types"] {
        for arm in ["feedback", "no-feedback"] {
            let r = row(critic, arm);
            for measure in ["precision", "recall"] {
                let (value, lo, hi) =
                    (number(&r, measure), number(&r, &format!("{measure}_lo")), number(&r, &format!("{measure}_hi")));
                assert!(
                    lo <= value && value <= hi && (0.0..=1.0).contains(&lo) && hi <= 1.0,
                    "{critic} {arm} {measure}: {r:?}"
                );
                assert!(!r[&format!("{measure}_interval")].is_empty());
            }
        }
    }
    let shotgun_row = row("shotgun", "feedback");
    assert!(number(&shotgun_row, "precision_hi") < 0.5, "{shotgun_row:?}");
    assert_eq!(number(&shotgun_row, "recall"), 1.0, "it names every defect there is");
    assert!(number(&row("rubric", "feedback"), "precision_lo") > 0.5);
    assert_eq!(
        (number(&row("wrong-types", "feedback"), "precision"), number(&row("wrong-types", "feedback"), "recall")),
        (0.0, 0.0)
    );
    // The keyword critic names no defect type: no precision, and a recall of 0.
    let keyword_row = row("keyword", "feedback");
    assert_eq!((optional(&keyword_row, "precision"), optional(&keyword_row, "recall")), (None, Some(0.0)));

    // The shotgun's precision by hand: its names against the truth of each draft it critiqued.
    let truth: std::collections::HashMap<(String, u32, u32), Vec<String>> =
        critbench_storage::evaluations::read_evaluations(&out.join("evaluations.parquet"))
            .unwrap()
            .into_iter()
            .filter(|r| r.evaluator == "sim-truth" && r.critic == "shotgun" && r.arm.as_str() == "feedback")
            .map(|r| ((r.task_id, r.epoch, r.round), r.critique.issue_types))
            .collect();
    let (mut named, mut real) = (0, 0);
    critbench_storage::recorded::for_each_recorded_loop::<std::convert::Infallible>(
        &out.join("trajectories.parquet"),
        |recorded| {
            if recorded.critic == "shotgun" && recorded.arm.as_str() == "feedback" {
                for (round, critiqued) in recorded.rounds.iter().enumerate() {
                    let defects = &truth[&(recorded.task_id.clone(), recorded.epoch, round as u32)];
                    named += critiqued.critique.issue_types.len();
                    real += critiqued.critique.issue_types.iter().filter(|t| defects.contains(t)).count();
                }
            }
            Ok(())
        },
    )
    .unwrap();
    let by_hand = real as f64 / named as f64;
    assert!((by_hand - number(&shotgun_row, "precision")).abs() < 1e-12, "{by_hand} against {shotgun_row:?}");
    // Per round too, in evaluator_rounds.csv.
    let rounds = csv_rows(&out.join("evaluator_rounds.csv"));
    let first =
        rounds.iter().find(|r| r["critic"] == "shotgun" && r["arm"] == "feedback" && r["round"] == "0").unwrap();
    assert!(number(first, "precision") < 0.5 && number(first, "recall") == 1.0, "{first:?}");

    // The terminal leads with both kinds of critic, and says each critic's precision and recall.
    let lead = &printed[..printed.find("The answer, by").unwrap()];
    assert!(lead.contains("shotgun: most issue types it names are not defects the draft has (precision "), "{lead}");
    assert!(lead.contains("wrong-types: none of its ") && lead.contains("keyword: none of its "), "{lead}");
    assert!(!lead.contains("rubric"), "{lead}");
    let names_line = |critic: &str| {
        let block = &printed[printed.find(&format!("\n{critic} (120 tasks")).unwrap()..];
        block.lines().find(|l| l.starts_with("  its issue types by sim-truth, feedback: ")).unwrap().to_string()
    };
    assert!(!names_line("rubric").contains("flagged"), "{}", names_line("rubric"));
    assert!(names_line("shotgun").ends_with("; flagged: most names are not defects the draft has"));
    assert!(names_line("wrong-types").ends_with("; flagged: names no real defect"));
    let percent = format!(
        "precision {:.1}% ({:.1} to {:.1})",
        100.0 * number(&shotgun_row, "precision"),
        100.0 * number(&shotgun_row, "precision_lo"),
        100.0 * number(&shotgun_row, "precision_hi")
    );
    assert!(names_line("shotgun").contains(&percent), "{percent}: {}", names_line("shotgun"));
}

/// A command critic that gives its issue types as a top-level `issue_types` list, as the writer
/// protocol's request shows them, and a key of its own: neither is read, each is warned of once,
/// naming where issue types go, and counted in the manifest.
#[test]
fn a_critique_key_critbench_does_not_read_is_a_warning_not_a_silent_drop() {
    const TOP_LEVEL_TYPES: &str = r#"
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "top-level", "version": "1.0", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    critique = {"score": 4, "issues": ["the method is thin"], "issue_types": ["weak_methodology"]}
    if message["request"]["round"] == 0:
        critique["confidence"] = 0.9
    send({"id": message["id"], "critique": critique})
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("critic.py"), TOP_LEVEL_TYPES).unwrap();
    let file = experiment(
        dir.path(),
        "keys.toml",
        &format!(
            "name = \"keys\"\ndataset = \"{}\"\nbackend = \"sim\"\narms = [\"feedback\", \"no-feedback\"]\n\
             [[critics]]\nname = \"top-level\"\ncommand = [\"python3\", \"critic.py\"]\n",
            repo().join("datasets/papers.jsonl").display()
        ),
    );
    let out = dir.path().join("keys");
    let printed = ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--limit", "6"]));
    let warnings: Vec<&str> = printed.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 1, "{printed}");
    let critiques = manifest(&out)["critiques_by_critic"]["top-level"]["recorded"].as_u64().unwrap();
    assert!(
        warnings[0].starts_with("warning: critic `top-level`'s answers carry keys critbench does not read")
            && warnings[0].contains(&format!("`issue_types` in {critiques} of {critiques} critiques"))
            && warnings[0].contains("an issue's type goes on the issue: `issues` entries `{\"text\", \"type\"}`")
            && warnings[0].contains("`confidence` in 12 of "),
        "{}",
        warnings[0]
    );
    let counted = &manifest(&out)["unread_critique_keys"]["top-level"];
    assert_eq!((counted["issue_types"].as_u64(), counted["confidence"].as_u64()), (Some(critiques), Some(12)));
    // The types were not read: the trajectories hold none.
    assert!(recorded_rounds(&out).iter().all(|(_, _, round)| round.critique.issue_types.is_empty()));
    // `critbench report` says it again from the files.
    let again = ok(critbench(&["report", out.to_str().unwrap()]));
    assert!(again.contains("warning: critic `top-level`'s answers carry keys critbench does not read"), "{again}");
}
