//! An installed `critbench` (the binary alone, elsewhere on disk, as `cargo install` leaves it)
//! runs its starter experiment with the critics compiled into it, and finds plugin libraries in
//! the user's plugin directory.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{binary, require_plugins, stdout};

fn plugin_file(name: &str) -> String {
    format!("{}critbench_{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// Runs the copied binary from `cwd` with `home` as `HOME`, `data` as `XDG_DATA_HOME` and no other
/// plugin dir.
fn installed(exe: &Path, cwd: &Path, home: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("XDG_DATA_HOME", data)
        .env_remove("CRITBENCH_PLUGIN_DIR")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("the copied binary runs")
}

#[test]
fn an_installed_binary_runs_its_starter_with_no_plugin_files_and_finds_libraries_in_the_user_plugin_dir() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let (bin, home, work) = (dir.path().join("bin"), dir.path().join("home"), dir.path().join("work"));
    let data = home.join("data");
    for d in [&bin, &home, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    let exe = bin.join("critbench");
    std::fs::copy(binary(), &exe).unwrap();

    // Nothing beside the binary, nothing in HOME: `init` and `run` work from an empty directory.
    let init = installed(&exe, &work, &home, &data, &["init", "starter"]);
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let run = installed(&exe, &work, &home, &data, &["run", "starter/experiment.toml", "--quiet"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary = std::fs::read_to_string(work.join("starter/reports/starter/summary.csv")).unwrap();
    for critic in ["rubric", "evidence"] {
        assert!(summary.contains(&format!(",{critic},")), "no {critic} row:\n{summary}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("starter/reports/starter/manifest.json")).unwrap())
            .unwrap();
    for plugin in manifest["plugins"].as_array().unwrap() {
        assert_eq!(plugin["builtin"], true, "{plugin}");
        assert_eq!(plugin["path"], exe.canonicalize().unwrap().to_str().unwrap(), "{plugin}");
    }

    // A plugin that is not built in is looked for in the user's plugin directory, named in the error.
    let experiment = work.join("typed.toml");
    std::fs::write(
        &experiment,
        "name = \"typed\"\ndataset = \"starter/tasks.jsonl\"\nbackend = \"sim\"\narms = [\"feedback\"]\n\
         [[critics]]\nname = \"typed\"\nplugin = \"typed-issues\"\n",
    )
    .unwrap();
    let typed = ["run", "typed.toml", "--limit", "3", "--out", "out", "-q"];
    let before = installed(&exe, &work, &home, &data, &typed);
    assert_eq!(before.status.code(), Some(2), "{}", String::from_utf8_lossy(&before.stderr));
    let plugin_dir = data.join("critbench/plugins");
    let error = String::from_utf8_lossy(&before.stderr);
    assert!(error.contains(&plugin_dir.display().to_string()), "{error}");
    assert!(error.contains("the built-in critics are `rubric`"), "{error}");

    std::fs::create_dir_all(&plugin_dir).unwrap();
    let library = plugin_dir.join(plugin_file("typed_issues"));
    std::fs::copy(binary().parent().unwrap().join(plugin_file("typed_issues")), &library).unwrap();
    let listed = stdout(&installed(&exe, &work, &home, &data, &["plugins", "list"]));
    assert!(listed.lines().any(|l| l.starts_with("rubric ") && l.ends_with(" built in")), "{listed}");
    assert!(
        listed.lines().any(|l| l.starts_with("typed-issues") && l.ends_with(&library.display().to_string())),
        "{listed}"
    );
    let after = installed(&exe, &work, &home, &data, &typed);
    assert!(after.status.success(), "{}", String::from_utf8_lossy(&after.stderr));
    assert!(work.join("out/outcomes.parquet").is_file());
}

/// `plugins list` shows every library in the search path, a plugin without the `critbench_`
/// prefix too, and says why one that does not load failed (the loader's own message).
#[test]
fn plugins_list_shows_every_library_and_why_one_does_not_load() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join(format!("{}length{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
    std::fs::copy(binary().parent().unwrap().join(plugin_file("rubric")), &plain).unwrap();
    let broken = dir.path().join(format!("{}broken{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
    std::fs::write(&broken, "not a shared library\n".repeat(20)).unwrap();
    let listed = common::ok(common::critbench(&["plugins", "list", "--plugin-dir", dir.path().to_str().unwrap()]));
    let line = listed.lines().find(|l| l.contains(&plain.display().to_string())).unwrap_or_else(|| panic!("{listed}"));
    assert!(line.starts_with("rubric") && line.contains("shadowed by the built-in"), "{line}");
    let line = listed.lines().find(|l| l.contains(&broken.display().to_string())).unwrap_or_else(|| panic!("{listed}"));
    // glibc's dlerror() for a file that is not ELF.
    assert!(line.contains("dlopen failed: ") && line.contains("invalid ELF header"), "{line}");
}
