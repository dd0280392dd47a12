//! An installed `critbench` (the binary alone, elsewhere on disk, as `cargo install` leaves it)
//! finds the built-in plugins in the user's plugin directory.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{binary, repo, require_plugins, stdout};

fn plugin_file(name: &str) -> String {
    format!("{}critbench_{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// Runs the copied binary from `cwd` with `data` as `XDG_DATA_HOME` and no other plugin dir.
fn installed(exe: &Path, cwd: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .env("XDG_DATA_HOME", data)
        .env_remove("CRITBENCH_PLUGIN_DIR")
        .output()
        .expect("the copied binary runs")
}

#[test]
fn an_installed_binary_finds_plugins_in_the_user_plugin_dir() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let (bin, data, work) = (dir.path().join("bin"), dir.path().join("data"), dir.path().join("work"));
    for d in [&bin, &data, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    let exe = bin.join("critbench");
    std::fs::copy(binary(), &exe).unwrap();
    let experiment = work.join("exp.toml");
    std::fs::write(
        &experiment,
        format!(
            "name = \"installed\"\ndataset = \"{}\"\nbackend = \"sim\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n",
            repo().join("datasets/papers.jsonl").display()
        ),
    )
    .unwrap();
    let run = ["run", "exp.toml", "--limit", "3", "--out", "out", "-q"];

    // Before the plugins are installed: the run names the plugin and where it looked.
    let before = installed(&exe, &work, &data, &run);
    assert_eq!(before.status.code(), Some(2), "{}", String::from_utf8_lossy(&before.stderr));
    let plugin_dir = data.join("critbench/plugins");
    assert!(String::from_utf8_lossy(&before.stderr).contains(&plugin_dir.display().to_string()));

    // `just install-plugins` copies the built plugins there.
    std::fs::create_dir_all(&plugin_dir).unwrap();
    for name in ["rubric", "evidence"] {
        std::fs::copy(binary().parent().unwrap().join(plugin_file(name)), plugin_dir.join(plugin_file(name))).unwrap();
    }
    let listed = stdout(&installed(&exe, &work, &data, &["plugins", "list"]));
    let rubric = plugin_dir.join(plugin_file("rubric"));
    assert!(listed.lines().any(|l| l.starts_with("rubric") && l.ends_with(&rubric.display().to_string())), "{listed}");
    let after = installed(&exe, &work, &data, &run);
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
    assert!(listed.lines().any(|l| l.starts_with("rubric") && l.ends_with(&plain.display().to_string())), "{listed}");
    let line = listed.lines().find(|l| l.contains(&broken.display().to_string())).unwrap_or_else(|| panic!("{listed}"));
    // glibc's dlerror() for a file that is not ELF.
    assert!(line.contains("dlopen failed: ") && line.contains("invalid ELF header"), "{line}");
}
